"""A real OpenID provider for the single sign-on tests: a second Django site running
django-oidc-provider, started as its own HTTP server process (server.py)."""
