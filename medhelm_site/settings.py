"""Settings for medhelm-studio, all from environment variables with embedded defaults.

Embedded defaults (no server needed): a SQLite database and a SQLite-backed Celery broker
and result store, both under MEDHELM_DATA_DIR (default ./var). Production sets
DATABASE_URL, CELERY_BROKER_URL, SECRET_KEY and ALLOWED_HOSTS; nothing else changes.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in {"1", "true", "yes", "on"}:
        return True
    if raw.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no)")


def env_list(name: str, default: str) -> list[str]:
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


def env_positive_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip().replace("_", ""))
    except ValueError:
        value = 0
    if value <= 0:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a positive whole number")
    return value


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
# limits above holding for each run; a run directory holds about ten files.
MEDHELM_IMPORT_SUITE_MAX_MEMBERS = env_positive_int("MEDHELM_IMPORT_SUITE_MAX_MEMBERS", 20000)
if MEDHELM_IMPORT_INLINE_MAX_BYTES > MEDHELM_IMPORT_MAX_UPLOAD_BYTES:
    raise ImproperlyConfigured(
        "MEDHELM_IMPORT_INLINE_MAX_BYTES must not exceed MEDHELM_IMPORT_MAX_UPLOAD_BYTES"
    )
if MEDHELM_IMPORT_ZIP_MAX_MEMBER_BYTES > MEDHELM_IMPORT_ZIP_MAX_TOTAL_BYTES:
    raise ImproperlyConfigured(
        "MEDHELM_IMPORT_ZIP_MAX_MEMBER_BYTES must not exceed MEDHELM_IMPORT_ZIP_MAX_TOTAL_BYTES"
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

# Security settings that `check --deploy` asks for; TLS ones can be switched off behind a
# proxy that terminates TLS elsewhere.
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "0" if DEBUG else "31536000"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
if env_bool("USE_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SILENCED_SYSTEM_CHECKS = env_list("SILENCED_SYSTEM_CHECKS", "")

# ---- Content-Security-Policy (django-csp) --------------------------------------------------
# Everything from the site itself and nothing inline: no inline <script> or <style>, no style
# attributes, no event-handler attributes (the pages' JavaScript and CSS are static files).
# Self-contained documents (the Delphi HTML report, the stored SVG figures) carry a policy of
# their own built from their bytes (medhelm_site.csp). Kept in its own block on purpose.
INSTALLED_APPS += ["csp"]
MIDDLEWARE.insert(
    MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1,
    "csp.middleware.CSPMiddleware",
)
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}
# ---- end Content-Security-Policy ----------------------------------------------------------

# Celery. The embedded default is kombu's SQLAlchemy transport on a SQLite file: it needs no
# server, and a long jury run still runs in a worker process, never inside a web request.
_default_broker = f"sqla+sqlite:///{DATA_DIR / 'celery-broker.sqlite3'}"
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", _default_broker)
if "CELERY_RESULT_BACKEND" in os.environ:
    CELERY_RESULT_BACKEND = os.environ["CELERY_RESULT_BACKEND"]
elif CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CELERY_RESULT_BACKEND = CELERY_BROKER_URL
else:
    CELERY_RESULT_BACKEND = f"db+sqlite:///{DATA_DIR / 'celery-results.sqlite3'}"
# Workers keep database connections for DATABASE_CONN_MAX_AGE, as the web server does
# (medhelm_site.celery closes those past their age around each task); without this, Celery
# closes every connection before and after every task.
CELERY_DB_REUSE_MAX = 2**31 if DATABASES["default"].get("CONN_MAX_AGE") else None
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True  # a task whose worker dies is delivered again (tasks are idempotent)
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_RESULT_EXTENDED = True
CELERY_TASK_TRACK_STARTED = True
CELERY_BEAT_SCHEDULE_FILENAME = os.environ.get(
    "CELERY_BEAT_SCHEDULE_FILENAME", str(DATA_DIR / "celerybeat-schedule")
)

# Jury rate limits (per-judge concurrency and requests per minute, across every worker):
# "auto" keeps them in Redis when the Celery broker is Redis, else in the database (SQLite
# and the embedded broker); "redis" or "database" forces one. JURY_LIMITER_REDIS_URL names
# another Redis than the broker's.
JURY_LIMITER = os.environ.get("JURY_LIMITER", "auto")
JURY_LIMITER_REDIS_URL = os.environ.get("JURY_LIMITER_REDIS_URL", "")
# The prefix of the limiter's Redis keys (two sites on one Redis need two prefixes).
JURY_LIMITER_PREFIX = os.environ.get("JURY_LIMITER_PREFIX", "medhelm:jury:limits:")
# A call that waited this long for a slot of its judge's limits gives up its turn (and is
# logged); the sweep sends it again.
JURY_MAX_WAIT_FOR_SLOT_SECONDS = float(os.environ.get("JURY_MAX_WAIT_FOR_SLOT_SECONDS", "600"))
# The sweep (Celery beat, jury.execution.sweep): every interval, while no worker holds a call
# and none ended for the grace period, pending calls last sent before the grace period are
# sent again; after the given number of re-dispatches they end as provider errors.
JURY_SWEEP_INTERVAL_SECONDS = float(os.environ.get("JURY_SWEEP_INTERVAL_SECONDS", "60"))
JURY_SWEEP_GRACE_SECONDS = float(os.environ.get("JURY_SWEEP_GRACE_SECONDS", "300"))
JURY_SWEEP_MAX_REDISPATCHES = int(os.environ.get("JURY_SWEEP_MAX_REDISPATCHES", "3"))
CELERY_BEAT_SCHEDULE = {
    "jury-sweep": {
        "task": "jury.sweep_calls",
        "schedule": JURY_SWEEP_INTERVAL_SECONDS,
        # A sweep that waited in the queue past the next one is dropped, not piled up.
        "options": {"expires": JURY_SWEEP_INTERVAL_SECONDS},
    },
}
# When a judge's provider is down (jury.breakers): down signals in a row (connection refused,
# 502/503) that pause the calls of its endpoint, seconds between two probe requests while
# paused, and seconds after which a paused endpoint nobody probes is forgotten.
JURY_BREAKER_THRESHOLD = env_positive_int("JURY_BREAKER_THRESHOLD", 3)
JURY_BREAKER_PROBE_SECONDS = float(os.environ.get("JURY_BREAKER_PROBE_SECONDS", "5"))
JURY_BREAKER_FORGET_SECONDS = float(os.environ.get("JURY_BREAKER_FORGET_SECONDS", "120"))
# What a judge defined in the admin may use. Its API key variable: MEDHELM_JUDGE_KEY_<NAME>,
# or one listed here (comma-separated; the site's own secrets never). Its endpoint: a host
# listed here ("*.domain" for one label; an IP address only on loopback, http only there).
JURY_ALLOWED_KEY_VARIABLES = env_list("JURY_ALLOWED_KEY_VARIABLES", "")
JURY_ALLOWED_HOSTS = env_list(
    "JURY_ALLOWED_HOSTS",
    "api.openai.com,api.anthropic.com,*.openai.azure.com,127.0.0.1,localhost,::1",
)

# A report being computed in the background (agreement.services.jobs) writes progress every
# second or so; one with none for this long has lost its worker and is failed with the reason.
AGREEMENT_REPORT_STALE_SECONDS = env_positive_int("AGREEMENT_REPORT_STALE_SECONDS", 600)
# The pages and the API queue reports for a Celery worker; off, they compute in the request.
AGREEMENT_REPORTS_IN_BACKGROUND = env_bool("AGREEMENT_REPORTS_IN_BACKGROUND", True)

# Composition of the apps, by name, so that no app imports one further up the chain
# (delphi <- annotation <- jury <- agreement):
# Celery tasks run with the ImportJob id after an item import succeeds (each decides whether
# the job concerns it); set to an empty string to run none.
MEDHELM_AFTER_IMPORT_TASKS = env_list("MEDHELM_AFTER_IMPORT_TASKS", "jury.import_helm_verdicts")
# The task, run by name, that refreshes a study's agreement watch when ratings arrive, and
# the seconds it waits first so that a burst of submissions makes one refresh (the debounce).
MEDHELM_WATCH_TASK = os.environ.get("MEDHELM_WATCH_TASK", "agreement.refresh_watch")
MEDHELM_WATCH_DEBOUNCE_SECONDS = float(os.environ.get("MEDHELM_WATCH_DEBOUNCE_SECONDS", "10"))
# Management commands that load the demo, in order (`manage.py rundemo`).
MEDHELM_DEMO_LOADERS = ["load_demo", "load_demo_jury", "load_demo_delphi"]

# Celery queues. Judge calls take seconds to minutes each and a run sends thousands; the
# automatic metrics take seconds for a whole study: each has its own queue, so that a worker
# can serve the metrics while others work through the jury. Imports and everything else use
# the default queue. A worker started without --queues consumes every queue declared here; a
# route to an undeclared queue fails when the task is sent (medhelm_site.checks says so at
# startup), never leaving the task where no worker looks.
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = {"celery": {}, "metrics": {}, "jury": {}}
CELERY_TASK_CREATE_MISSING_QUEUES = False
CELERY_TASK_ROUTES = {
    "jury.compute_metrics": {"queue": "metrics"},
    "jury.execute_judge_call": {"queue": "jury"},
    "jury.execute_judge_calls": {"queue": "jury"},
}
# The demo's Celery workers (`manage.py rundemo`): name -> the queues it consumes and its
# processes. The jury's worker takes the judge calls; the other serves the metrics and the
# default queue at once, whatever the jury has queued.
MEDHELM_DEMO_WORKERS = {
    # The sweep task goes to the default queue ("celery"): beat runs in the worker that takes it.
    "demo": {"queues": ["celery", "metrics"], "concurrency": 1, "beat": True},
    "demo-jury": {"queues": ["jury"], "concurrency": 2},
}

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

# ---- Logs, health and readiness -------------------------------------------------------------
# MEDHELM_LOG_FORMAT=json: one JSON object per line (medhelm_site.logs.JsonFormatter) and one
# line per request (method, path, status, duration, user id; never a body or query string).
# Whatever the format, the `redact` filter removes secrets (Authorization headers, tokens,
# passwords, SECRET_KEY, the passwords in DATABASE_URL and the broker URL) from every record.
MEDHELM_LOG_FORMAT = os.environ.get("MEDHELM_LOG_FORMAT", "text").strip().lower() or "text"
if MEDHELM_LOG_FORMAT not in {"text", "json"}:
    raise ImproperlyConfigured(f"MEDHELM_LOG_FORMAT={MEDHELM_LOG_FORMAT!r}: use text or json")
MEDHELM_REQUEST_LOG = env_bool("MEDHELM_REQUEST_LOG", MEDHELM_LOG_FORMAT == "json")
if MEDHELM_REQUEST_LOG:
    MIDDLEWARE.append("medhelm_site.logs.RequestLogMiddleware")

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
    *MIDDLEWARE,
    "medhelm_site.accounts.middleware.IdleSessionMiddleware",
    "axes.middleware.AxesMiddleware",
]
# Single sign-on through OpenID Connect (accounts/sso/, mozilla-django-oidc): off unless
# MEDHELM_OIDC_CLIENT_ID is set. The provider's endpoints come from its discovery document
# (MEDHELM_OIDC_ISSUER + /.well-known/openid-configuration), or each from its own variable.
# A provider's user signs in as the account with the e-mail the provider says it verified
# (email_verified true); anyone else is refused on the login page, unless
# MEDHELM_OIDC_CREATE_USERS=1 makes them an account with no role in any study.
MEDHELM_OIDC_CLIENT_ID = os.environ.get("MEDHELM_OIDC_CLIENT_ID", "")
MEDHELM_OIDC_CLIENT_SECRET = os.environ.get("MEDHELM_OIDC_CLIENT_SECRET", "")
MEDHELM_OIDC_ISSUER = os.environ.get("MEDHELM_OIDC_ISSUER", "").strip().rstrip("/")
MEDHELM_OIDC_PROVIDER_NAME = os.environ.get("MEDHELM_OIDC_PROVIDER_NAME", "").strip() or (
    "single sign-on"
)
MEDHELM_OIDC_SCOPES = os.environ.get("MEDHELM_OIDC_SCOPES", "openid email profile")
MEDHELM_OIDC_SIGN_ALGO = os.environ.get("MEDHELM_OIDC_SIGN_ALGO", "RS256")
MEDHELM_OIDC_CREATE_USERS = env_bool("MEDHELM_OIDC_CREATE_USERS", False)
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
    for _url in (MEDHELM_OIDC_ISSUER, MEDHELM_OIDC_ENDPOINTS["end_session"]):
        if _url:
            _origin = "{0.scheme}://{0.netloc}".format(urlsplit(_url))
            if _origin not in CONTENT_SECURITY_POLICY["DIRECTIVES"]["form-action"]:
                CONTENT_SECURITY_POLICY["DIRECTIVES"]["form-action"].append(_origin)
# --- end of identity and sessions ------------------------------------------------------------

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"redact": {"()": "medhelm_site.logs.RedactSecrets"}},
    "formatters": {
        "json": {"()": "medhelm_site.logs.JsonFormatter"},
        "text": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["redact"],
            "formatter": MEDHELM_LOG_FORMAT,
        }
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        # httpx (under the judges' SDKs) logs every request at INFO: one line per judge call,
        # between the lines of run_jury's progress bar. Its warnings and errors still show.
        "httpx": {"level": "WARNING"},
        # SQL with its parameters (item text, ratings, password hashes) is never logged.
        "django.db.backends": {"level": "INFO"},
    },
}
# With JSON logs the Celery workers and beat leave the root logger as configured above, so
# that their lines are JSON too (Celery would otherwise put its own text handler there).
CELERY_WORKER_HIJACK_ROOT_LOGGER = MEDHELM_LOG_FORMAT != "json"
# /readyz asks the Celery workers for a ping and waits this long for the answers.
MEDHELM_READYZ_PING_TIMEOUT = float(os.environ.get("MEDHELM_READYZ_PING_TIMEOUT", "1.0"))
# Load balancers probe over plain HTTP: the probes are not redirected to HTTPS.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
# ---- end logs, health and readiness ---------------------------------------------------------
