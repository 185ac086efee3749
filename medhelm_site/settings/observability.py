"""Logs, health and readiness: the log format (text or JSON) and its redaction, the request
log's middleware, the /readyz ping and the probes' exemption from the HTTPS redirect."""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from medhelm_site.settings.env import env_bool
from medhelm_site.settings.security import MIDDLEWARE as _MIDDLEWARE

# ---- Logs, health and readiness -------------------------------------------------------------
# MEDHELM_LOG_FORMAT=json: one JSON object per line (medhelm_site.logs.JsonFormatter) and one
# line per request (method, path, status, duration, user id; never a body or query string).
# Whatever the format, the `redact` filter removes secrets (Authorization headers, tokens,
# passwords, SECRET_KEY, the passwords in DATABASE_URL and the broker URL) from every record.
MEDHELM_LOG_FORMAT = os.environ.get("MEDHELM_LOG_FORMAT", "text").strip().lower() or "text"
if MEDHELM_LOG_FORMAT not in {"text", "json"}:
    raise ImproperlyConfigured(f"MEDHELM_LOG_FORMAT={MEDHELM_LOG_FORMAT!r}: use text or json")
MEDHELM_REQUEST_LOG = env_bool("MEDHELM_REQUEST_LOG", MEDHELM_LOG_FORMAT == "json")
MIDDLEWARE = (
    [*_MIDDLEWARE, "medhelm_site.logs.RequestLogMiddleware"]
    if MEDHELM_REQUEST_LOG
    else list(_MIDDLEWARE)
)

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
# /readyz is unauthenticated and its worker check goes through the broker: one answer serves
# every caller of a web process for this many seconds (0: check on every request).
MEDHELM_READYZ_CACHE_SECONDS = float(os.environ.get("MEDHELM_READYZ_CACHE_SECONDS", "3.0"))
# Load balancers probe over plain HTTP: the probes are not redirected to HTTPS.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
# ---- end logs, health and readiness ---------------------------------------------------------
