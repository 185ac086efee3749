"""Single sign-on through OpenID Connect (mozilla-django-oidc): the provider's settings and
discovery (config), matching its users to ours by verified e-mail (matching), the
authentication backend (backend) and the start and callback pages (views)."""
