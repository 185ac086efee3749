"""The site's core settings: debug, secret key and hosts, apps and middleware, templates,
the database, passwords, locale, static and media files, upload limits, e-mail and the API.

The parts of medhelm_site.settings that follow (security, workers, observability, identity)
build on these: see that package's docstring for the order."""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from medhelm_site.settings.env import env_bool, env_list, env_positive_int

BASE_DIR = Path(__file__).resolve().parents[2]

DEBUG = env_bool("DJANGO_DEBUG", False)

DATA_DIR = Path(os.environ.get("MEDHELM_DATA_DIR", BASE_DIR / "var")).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set it in the environment (it has no production default), "
            "or set DJANGO_DEBUG=1 for local development."
        )
    SECRET_KEY = "dev-only-insecure-key-never-used-when-debug-is-off"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "knox",  # API tokens (accounts.ApiToken is its token model)
    "axes",  # login throttling
    "drf_spectacular",
    "medhelm_site.apps.SiteConfig",
    "delphi",
    "annotation",
    "jury",
    "agreement",
    "medhelm_site.accounts",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # A view that meets a database outage answers 503 + Retry-After (handler500 does the
    # same for an outage met in a middleware).
    "medhelm_site.database_outage.DatabaseUnavailableMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "medhelm_site.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "medhelm_site" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "medhelm_site.wsgi.application"

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{DATA_DIR / 'medhelm.sqlite3'}"),
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "0")),
        # A connection kept across requests is checked before reuse: after a database restart
        # the first request reconnects instead of failing on the dead connection.
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server and the Celery worker write to one file: wait for locks instead of
    # failing at once, and take the write lock at BEGIN so that transactions do not deadlock.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 20, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL;"}
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}
MEDIA_ROOT = DATA_DIR / "media"

# Item imports (annotation.imports). An upload larger than MEDHELM_IMPORT_MAX_UPLOAD_BYTES is
# refused before its body is read. One is parsed inside the web request only when it is
# provably small: below MEDHELM_IMPORT_INLINE_MAX_BYTES, and for a zip, unpacking to at most
# as many bytes (counted while unpacking); anything else runs in a Celery worker. A zip is
# unpacked counting the bytes it really yields, never trusting the sizes it declares, and
# reading stops at the limits on one member, on the whole zip and on the number of members.
MEDHELM_IMPORT_MAX_UPLOAD_BYTES = env_positive_int("MEDHELM_IMPORT_MAX_UPLOAD_BYTES", 256 * 2**20)
MEDHELM_IMPORT_INLINE_MAX_BYTES = env_positive_int("MEDHELM_IMPORT_INLINE_MAX_BYTES", 1_000_000)
MEDHELM_IMPORT_ZIP_MAX_MEMBER_BYTES = env_positive_int(
    "MEDHELM_IMPORT_ZIP_MAX_MEMBER_BYTES", 256 * 2**20
)
MEDHELM_IMPORT_ZIP_MAX_TOTAL_BYTES = env_positive_int(
    "MEDHELM_IMPORT_ZIP_MAX_TOTAL_BYTES", 512 * 2**20
)
MEDHELM_IMPORT_ZIP_MAX_MEMBERS = env_positive_int("MEDHELM_IMPORT_ZIP_MAX_MEMBERS", 1000)
# A zip of a HELM suite (annotation.imports.suite): its runs are read one at a time, the byte
# limits above holding for each run; a run directory holds about ten files. All its runs
# together may unpack to at most MEDHELM_IMPORT_MAX_UNPACKED_BYTES, counted before any is read.
MEDHELM_IMPORT_SUITE_MAX_MEMBERS = env_positive_int("MEDHELM_IMPORT_SUITE_MAX_MEMBERS", 20000)
MEDHELM_IMPORT_MAX_UNPACKED_BYTES = env_positive_int("MEDHELM_IMPORT_MAX_UNPACKED_BYTES", 4 * 2**30)
if MEDHELM_IMPORT_INLINE_MAX_BYTES > MEDHELM_IMPORT_MAX_UPLOAD_BYTES:
    raise ImproperlyConfigured(
        "MEDHELM_IMPORT_INLINE_MAX_BYTES must not exceed MEDHELM_IMPORT_MAX_UPLOAD_BYTES"
    )
if MEDHELM_IMPORT_ZIP_MAX_MEMBER_BYTES > MEDHELM_IMPORT_ZIP_MAX_TOTAL_BYTES:
    raise ImproperlyConfigured(
        "MEDHELM_IMPORT_ZIP_MAX_MEMBER_BYTES must not exceed MEDHELM_IMPORT_ZIP_MAX_TOTAL_BYTES"
    )
if MEDHELM_IMPORT_ZIP_MAX_TOTAL_BYTES > MEDHELM_IMPORT_MAX_UNPACKED_BYTES:
    raise ImproperlyConfigured(
        "MEDHELM_IMPORT_ZIP_MAX_TOTAL_BYTES must not exceed MEDHELM_IMPORT_MAX_UNPACKED_BYTES"
    )
# Django's own upload limits, stated here because the import limits rely on them: an
# uploaded file above FILE_UPLOAD_MAX_MEMORY_SIZE is streamed to a temporary file, not held in
# memory; DATA_UPLOAD_MAX_MEMORY_SIZE caps the form fields other than files (a larger body of
# plain fields is refused with a 400), so only the import limits above bound a file's size.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440  # Django's default
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440  # Django's default

# E-mail: console in development; production sets EMAIL_BACKEND and the SMTP settings.
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "medhelm-studio <noreply@localhost>")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first, so that an anonymous API request gets 401 with WWW-Authenticate.
        "medhelm_site.accounts.auth.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # DRF's parsers and pagination with limits: a body nested too deeply and a huge limit or
    # offset answer 400 or a bounded page, not a 500 (medhelm_site/common/rest.py).
    "DEFAULT_PARSER_CLASSES": [
        "medhelm_site.common.rest.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "medhelm_site.common.rest.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 100,
    # Domain errors (medhelm_site.common.errors.DomainError) answer 400 naming the field.
    "EXCEPTION_HANDLER": "medhelm_site.domain_errors.api_exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "medhelm-studio API",
    "DESCRIPTION": "Rating studies, clinician ratings, LLM juries and agreement reports.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
}
