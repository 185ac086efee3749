"""Settings of the test OpenID provider site (django-oidc-provider), from the environment
set by tests/support/oidc_provider/server.py: its database file and its own URL."""

from __future__ import annotations

import os

SECRET_KEY = "oidc-provider-test-only-key-not-a-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
# The issuer: django-oidc-provider builds it from SITE_URL and the mount point (/openid).
SITE_URL = os.environ["OIDC_TEST_PROVIDER_URL"]

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oidc_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "tests.support.oidc_provider.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [os.path.join(os.path.dirname(__file__), "templates")],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ["OIDC_TEST_PROVIDER_DB"],
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
USE_TZ = True
LOGIN_URL = "/login/"
# The site under test runs on the same host (another port): cookies ignore ports, so the
# provider's cookies have names of their own.
SESSION_COOKIE_NAME = "provider_sessionid"
CSRF_COOKIE_NAME = "provider_csrftoken"
# Which e-mails the provider vouches for: members of the group "email-verified".
OIDC_USERINFO = "tests.support.oidc_provider.claims.userinfo"
