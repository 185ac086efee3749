"""Identity and sessions (medhelm_site.accounts): login throttling (django-axes), API tokens
(django-rest-knox), idle sessions, and single sign-on through OpenID Connect, whose provider
the Content-Security-Policy's form-action then allows."""

from __future__ import annotations

import os
from datetime import timedelta
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from medhelm_site.settings.env import env_bool, env_positive_int
from medhelm_site.settings.observability import MIDDLEWARE as _MIDDLEWARE
from medhelm_site.settings.security import CONTENT_SECURITY_POLICY as _CSP

# --- Identity and sessions (accounts/) ------------------------------------------------------
# Login throttling (django-axes): after LOGIN_FAILURE_LIMIT wrong passwords for one username
# from one address, that username is refused from that address for LOGIN_LOCKOUT_MINUTES
# (the login page says until when; the API answers 429). It covers every password check made
# for a web request: the login page, the admin's login and POST /api/auth/login/. Staff and a
# study's coordinators lift a lockout on /accounts/lockouts/; `manage.py unlock_account`.
AUTHENTICATION_BACKENDS = [
    "medhelm_site.accounts.backends.ThrottledLoginBackend",
    "django.contrib.auth.backends.ModelBackend",
    # Single sign-on (below): answers only a provider's callback, and only when configured.
    "medhelm_site.accounts.sso.backend.SsoBackend",
]
AXES_FAILURE_LIMIT = env_positive_int("LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_positive_int("LOGIN_LOCKOUT_MINUTES", 30))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_VERBOSE = False  # no banner on every manage.py command
AXES_RESET_ON_SUCCESS = True
# A try during a lockout does not push its end further: the time the page shows holds.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "medhelm_site.accounts.lockout.lockout_response"
# Behind LOGIN_PROXY_COUNT reverse proxies that each append to X-Forwarded-For, the client's
# address is the one they saw (accounts.backends.client_ip); with 0, REMOTE_ADDR.
LOGIN_PROXY_COUNT = int(os.environ.get("LOGIN_PROXY_COUNT", "0"))
AXES_CLIENT_IP_CALLABLE = "medhelm_site.accounts.backends.client_ip"
# Only password checks are counted (a single sign-on callback has none).
AXES_WHITELIST_CALLABLE = "medhelm_site.accounts.backends.is_not_a_password_check"
# API tokens (django-rest-knox): stored as SHA-512 hashes, expiring after API_TOKEN_DAYS, and
# refused once their owner's password changed (accounts.auth).
KNOX_TOKEN_MODEL = "accounts.ApiToken"
# knox's own migrations create its default token table even when the model is swapped out; a
# table no model knows breaks `flush` on PostgreSQL (it references auth_user). Without them
# knox's app has no table at all.
MIGRATION_MODULES = {"knox": None}
REST_KNOX = {"TOKEN_TTL": timedelta(days=env_positive_int("API_TOKEN_DAYS", 30))}
# A session ends after SESSION_IDLE_MINUTES without a request (accounts.middleware); the
# cookie's own age is the same, renewed at most once a minute while the user is active.
SESSION_IDLE_SECONDS = env_positive_int("SESSION_IDLE_MINUTES", 30) * 60
SESSION_COOKIE_AGE = SESSION_IDLE_SECONDS
# After every other middleware (axes' must be last): appended here rather than in the list.
MIDDLEWARE = [
    *_MIDDLEWARE,
    "medhelm_site.accounts.middleware.IdleSessionMiddleware",
    "axes.middleware.AxesMiddleware",
]
# Single sign-on through OpenID Connect (accounts/sso/, mozilla-django-oidc): off unless
# MEDHELM_OIDC_CLIENT_ID is set. The provider's endpoints come from its discovery document
# (MEDHELM_OIDC_ISSUER + /.well-known/openid-configuration), or each from its own variable.
# A provider's user signs in as the account bound to their subject (issuer + sub); the first
# time, as the account with the e-mail the provider says it verified (email_verified true),
# which binds it; anyone else is refused on the login page, unless
# MEDHELM_OIDC_CREATE_USERS=1 makes them an account with no role in any study. A staff or
# superuser account is never found by e-mail unless MEDHELM_OIDC_MATCH_STAFF_BY_EMAIL=1.
MEDHELM_OIDC_CLIENT_ID = os.environ.get("MEDHELM_OIDC_CLIENT_ID", "")
MEDHELM_OIDC_CLIENT_SECRET = os.environ.get("MEDHELM_OIDC_CLIENT_SECRET", "")
MEDHELM_OIDC_ISSUER = os.environ.get("MEDHELM_OIDC_ISSUER", "").strip().rstrip("/")
MEDHELM_OIDC_PROVIDER_NAME = os.environ.get("MEDHELM_OIDC_PROVIDER_NAME", "").strip() or (
    "single sign-on"
)
MEDHELM_OIDC_SCOPES = os.environ.get("MEDHELM_OIDC_SCOPES", "openid email profile")
MEDHELM_OIDC_SIGN_ALGO = os.environ.get("MEDHELM_OIDC_SIGN_ALGO", "RS256")
MEDHELM_OIDC_CREATE_USERS = env_bool("MEDHELM_OIDC_CREATE_USERS", False)
MEDHELM_OIDC_MATCH_STAFF_BY_EMAIL = env_bool("MEDHELM_OIDC_MATCH_STAFF_BY_EMAIL", False)
# After logging out here, also end the session at the provider (its end_session_endpoint).
MEDHELM_OIDC_PROVIDER_LOGOUT = env_bool("MEDHELM_OIDC_PROVIDER_LOGOUT", True)
MEDHELM_OIDC_ENDPOINTS = {
    name: os.environ.get(f"MEDHELM_OIDC_{name.upper()}_ENDPOINT", "").strip()
    for name in ("authorization", "token", "userinfo", "jwks", "end_session")
}
if MEDHELM_OIDC_CLIENT_ID:
    _oidc_missing = [
        name
        for name, value in (
            ("MEDHELM_OIDC_CLIENT_SECRET", MEDHELM_OIDC_CLIENT_SECRET),
            (
                "MEDHELM_OIDC_ISSUER (or every MEDHELM_OIDC_*_ENDPOINT)",
                MEDHELM_OIDC_ISSUER
                or all(v for k, v in MEDHELM_OIDC_ENDPOINTS.items() if k != "end_session"),
            ),
        )
        if not value
    ]
    if _oidc_missing:
        raise ImproperlyConfigured(
            f"MEDHELM_OIDC_CLIENT_ID is set, so single sign-on also needs {' and '.join(_oidc_missing)}"
        )
# Logging out posts a form here, answered by a redirect to the provider's logout: a form's
# redirect is held to form-action, so the provider's site is allowed there.
_form_action = list(_CSP["DIRECTIVES"]["form-action"])
if MEDHELM_OIDC_CLIENT_ID:
    for _url in (MEDHELM_OIDC_ISSUER, MEDHELM_OIDC_ENDPOINTS["end_session"]):
        if _url:
            _origin = "{0.scheme}://{0.netloc}".format(urlsplit(_url))
            if _origin not in _form_action:
                _form_action.append(_origin)
CONTENT_SECURITY_POLICY = {
    **_CSP,
    "DIRECTIVES": {**_CSP["DIRECTIVES"], "form-action": _form_action},
}
# --- end of identity and sessions ------------------------------------------------------------
