"""Structured logs that carry no secrets and no study content.

- `RedactSecrets` (a logging filter on the console handler) rewrites every record before
  any formatter sees it: the message is formatted once and its secrets replaced by
  "[redacted]" (Authorization/Cookie headers, `Token …`/`Bearer …` credentials, values of
  password/token/secret/key fields, the password of any URL with credentials, the tokens in
  the Delphi invitation and password-reset paths, the authorization code and state of a
  single sign-on callback's URL, and the literal values of the site's own secrets:
  SECRET_KEY, the database, broker and e-mail passwords, the single sign-on client secret,
  the judges' API keys); a traceback is formatted and redacted the same way; extra fields
  whose name says secret are replaced.
- `JsonFormatter` writes one JSON object per line with a fixed set of fields and only the
  simple-typed extras; it never dumps a request object or a body (`django.request` records
  carry the whole request).
- `RequestLogMiddleware` writes one line per request: method, path (tokens redacted, no
  query string), status, duration and the user's id; never a body, header or query string,
  so no item text, rating, comment or credential reaches it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

from django.http import HttpRequest, HttpResponse

REDACTED = "[redacted]"

#: Names that say a value is a credential (header, form field, dict key, keyword argument).
SECRET_NAME = re.compile(
    r"(?:authorization|cookie|password|passwd|pwd|secret|token|api[_-]?key|apikey|"
    r"session(?:id)?|csrf\w*|credential)",
    re.IGNORECASE,
)
_PATTERNS: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    # HTTP headers as written in a message or a repr of a header mapping
    (
        re.compile(
            r"""(?P<k>["']?(?:HTTP_)?(?:Authorization|Proxy-Authorization|Cookie|Set-Cookie|"""
            r"""X-Api-Key|X-CSRFToken)["']?\s*[:=]\s*)(?P<q>["']?)[^"'\r\n]+(?P=q)""",
            re.IGNORECASE,
        ),
        lambda m: f"{m['k']}{m['q']}{REDACTED}{m['q']}",
    ),
    # a credential with its scheme
    (
        re.compile(r"\b(Token|Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{6,}", re.IGNORECASE),
        lambda m: f"{m[1]} {REDACTED}",
    ),
    # name=value, name: value, "name": "value" for any secret-looking name
    (
        re.compile(
            r"""(?P<k>["']?[\w-]*(?:password|passwd|secret|token|api[_-]?key|apikey|sessionid|"""
            r"""csrfmiddlewaretoken)[\w-]*["']?\s*[:=]\s*)(?P<q>["']?)(?P<v>[^\s"'&,;)}\]]+)""",
            re.IGNORECASE,
        ),
        lambda m: f"{m['k']}{m['q']}{REDACTED}",
    ),
    # user:password@ in any URL
    (
        re.compile(r"(?P<s>[a-z][a-z0-9+.-]*://[^:/@\s]*):[^@/\s]+@", re.IGNORECASE),
        r"\g<s>:" + REDACTED + "@",
    ),
    # the tokens in paths: /delphi/join/<token>/ and /accounts/password/reset/<uid>/<token>/
    (re.compile(r"(/join/)[^/\s?\"']+"), r"\1" + REDACTED),
    (re.compile(r"(/password/reset/)(?!sent/|done/)[^/\s?\"']+/[^/\s?\"']+"), r"\1" + REDACTED),
    # a single sign-on callback's query string: the provider's one-time authorization code
    # (with the client secret, a sign-in) and the state that binds it to the browser
    (re.compile(r"([?&](?:code|state|session_state)=)[^&#\s\"']+"), r"\1" + REDACTED),
]


def _secret_values() -> list[str]:
    """The literal values of the site's own secrets (longest first), from the settings."""
    from django.conf import settings

    values: list[str] = [
        getattr(settings, "SECRET_KEY", ""),
        getattr(settings, "EMAIL_HOST_PASSWORD", ""),
        getattr(settings, "MEDHELM_OIDC_CLIENT_SECRET", ""),
    ]
    for database in getattr(settings, "DATABASES", {}).values():
        values.append(str(database.get("PASSWORD") or ""))
    for name in ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "JURY_LIMITER_REDIS_URL"):
        url = str(getattr(settings, name, "") or "")
        try:
            password = urlsplit(url).password
        except ValueError:
            password = None
        values.append(password or "")
    for variable, value in os.environ.items():
        if variable.startswith("MEDHELM_JUDGE_KEY_") or variable in getattr(
            settings, "JURY_ALLOWED_KEY_VARIABLES", []
        ):
            values.append(value)
    # a short value would redact ordinary words: secrets this short are refused elsewhere
    return sorted({v for v in values if len(v) >= 6}, key=len, reverse=True)


class Redactor:
    """Replaces the secrets in a text; the site's secret values are read on first use."""

    @cached_property
    def values(self) -> list[str]:
        return _secret_values()

    def __call__(self, text: str) -> str:
        for value in self.values:
            if value in text:
                text = text.replace(value, REDACTED)
        for pattern, replacement in _PATTERNS:
            text = pattern.sub(replacement, text)
        return text


redact = Redactor()


def redact_value(name: str, value: Any, redactor: Callable[[str], str] = redact) -> Any:
    """An extra field's value as it may be logged: a secret-named one redacted, text
    scrubbed, anything else left to the formatter."""
    if SECRET_NAME.search(name):
        return REDACTED
    if isinstance(value, str):
        return redactor(value)
    return value


#: The attributes every LogRecord has: not "extra" fields.
_RECORD_FIELDS = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class RedactSecrets(logging.Filter):
    """Removes secrets from a record's message, traceback and extra fields (see the module)."""

    def __init__(self, name: str = "") -> None:
        super().__init__(name)
        self.redact = Redactor()

    def filter(self, record: logging.LogRecord) -> bool:
        redact = self.redact
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: keep what was given, never drop the record
            message = f"{record.msg!r} {record.args!r}"
        record.msg = redact(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = "".join(traceback.format_exception(*record.exc_info)).rstrip()
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        for name in set(vars(record)) - _RECORD_FIELDS:
            if name != "request":
                setattr(record, name, redact_value(name, getattr(record, name), redact))
        return True


def _simple(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, message, process,
    then the request's method and path when the record names one, the traceback when there
    is one, and the record's simple-typed extra fields. Nothing else is dumped."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": redact(record.getMessage()),
            "process": record.process,
        }
        request = getattr(record, "request", None)
        if isinstance(request, HttpRequest):
            entry["method"] = request.method
            entry["path"] = redact(request.path)
        for name in sorted(set(vars(record)) - _RECORD_FIELDS - {"request"}):
            value = getattr(record, name)
            if _simple(value) and not name.startswith("_"):
                entry[name] = redact_value(name, value)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = redact(record.exc_text)
        if record.stack_info:
            entry["stack"] = redact(self.formatStack(record.stack_info))
        return json.dumps(entry, ensure_ascii=False, default=str)


request_logger = logging.getLogger("medhelm.request")


class RequestLogMiddleware:
    """One line per request on the `medhelm.request` logger (see the module docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        user = getattr(request, "user", None)
        request_logger.info(
            "%s %s %s",
            request.method,
            redact(request.path),
            response.status_code,
            extra={
                "method": request.method,
                "path": redact(request.path),
                "status_code": response.status_code,
                "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                "user_id": user.pk if user is not None and user.is_authenticated else None,
            },
        )
        return response
