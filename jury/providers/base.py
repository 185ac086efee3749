"""Provider-neutral types for asking one judge model for one verdict.

Everything here is pure Python (no Django, no SDK import at module level) so that the jury
services, Celery tasks and benchmarks can share it, and so that tests run without a database.
The caller owns retries, backoff, rate limits and Retry-After: a client makes exactly one
attempt per `complete()` and reports failures as the `ProviderError` subclasses below, each
of which says whether trying again can help.
"""

from __future__ import annotations

import email.utils
import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from jury.providers import structured

PROVIDERS = ("openai", "anthropic", "local")

# The one tool an Anthropic judge is forced to call; its input is the verdict.
VERDICT_TOOL_NAME = "record_verdict"
# The name OpenAI's structured-output mode gives the schema (appears in logs and errors).
VERDICT_SCHEMA_NAME = "verdict"


@dataclass(frozen=True)
class CriterionSpec:
    """One rubric criterion as a judge sees it (a plain copy of annotation.RubricCriterion)."""

    key: str
    label: str
    definition: str
    scale_min: int
    scale_max: int
    anchors: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, criterion: Any) -> CriterionSpec:
        """The spec of a rubric criterion (annotation.RubricCriterion, or anything with its
        fields): this module imports no Django model."""
        return cls(
            key=criterion.key,
            label=criterion.label,
            definition=criterion.definition,
            scale_min=criterion.scale_min,
            scale_max=criterion.scale_max,
            anchors=criterion.anchors,
        )

    def __post_init__(self) -> None:
        if not self.key:
            raise ValueError("criterion key must not be empty")
        if isinstance(self.scale_min, bool) or isinstance(self.scale_max, bool):
            raise ValueError(f"criterion {self.key!r}: scale bounds must be integers")
        if not (isinstance(self.scale_min, int) and isinstance(self.scale_max, int)):
            raise ValueError(f"criterion {self.key!r}: scale bounds must be integers")
        if self.scale_min >= self.scale_max:
            raise ValueError(
                f"criterion {self.key!r}: scale_min {self.scale_min} must be below "
                f"scale_max {self.scale_max}"
            )
        # A read-only copy: the dataclass is frozen, and a caller mutating the dict it passed
        # in must not change a spec that is already part of a request.
        object.__setattr__(
            self, "anchors", MappingProxyType({str(k): str(v) for k, v in self.anchors.items()})
        )


@dataclass(frozen=True)
class JudgeRequest:
    system: str
    prompt: str
    criteria: tuple[CriterionSpec, ...]
    temperature: float = 0.0
    max_tokens: int = 1024
    timeout_seconds: float = 120.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "criteria", tuple(self.criteria))
        keys = [c.key for c in self.criteria]
        if len(set(keys)) != len(keys):
            raise ValueError(f"criterion keys must be unique, got {keys}")
        if self.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        if not self.timeout_seconds > 0:
            raise ValueError("timeout_seconds must be positive")


# The finish reasons of a reply cut at the request's max_tokens: "length" on OpenAI-compatible
# servers (llama.cpp's too), "max_tokens" on Anthropic's Messages API.
CUT_AT_MAX_TOKENS = frozenset({"length", "max_tokens"})


@dataclass(frozen=True)
class JudgeReply:
    """What the judge said, before any verdict parsing.

    `text` is the verdict as JSON text when `structured` (the provider constrained the output
    to the verdict schema, or it came from a forced tool call); otherwise the raw completion.
    Token counts are None when the provider did not report them.
    """

    text: str
    input_tokens: int | None
    output_tokens: int | None
    structured: bool
    refused: bool = False
    finish_reason: str | None = None

    @property
    def cut_at_max_tokens(self) -> bool:
        """The provider stopped because the reply reached the request's max_tokens."""
        return self.finish_reason in CUT_AT_MAX_TOKENS


class ProviderError(Exception):
    """One attempt failed. `retryable` tells the caller whether another attempt can help.

    Messages say what happened (provider, model, HTTP status, the provider's own error message,
    redacted and cut short; never the rest of a remote body) and never contain the API key.
    """

    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        retry_after_seconds: float | None = None,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.retry_after_seconds = retry_after_seconds
        if retryable is not None:
            self.retryable = retryable

    def __str__(self) -> str:
        return self.message


class RateLimited(ProviderError):
    """HTTP 429. `retry_after_seconds` comes from Retry-After / retry-after-ms when sent."""

    retryable = True


class ServerError(ProviderError):
    """HTTP 5xx (including Anthropic's 529 "overloaded")."""

    retryable = True


class ProviderTimeout(ProviderError):
    """No answer within the request's timeout (or HTTP 408)."""

    retryable = True


class ConnectionFailed(ProviderError):
    """Connection refused or reset, or the body ended before its announced length."""

    retryable = True


class BadRequest(ProviderError):
    """Any other 4xx (400, 401, 403, 404, 409, 413, 422): the same request fails again.

    Also used for configuration errors found before sending (missing local model file,
    prompt longer than a local model's context window).
    """

    retryable = False


class NotAllowed(BadRequest):
    """The operator's rules refuse the judge's key variable or endpoint (jury.providers.policy):
    nothing was sent, and nothing will be until the judge or the settings change."""


class UnsupportedStructuredOutput(BadRequest):
    """The server refused the request because of its structured-output mode (its error names
    response_format, json_schema, a grammar, format...): every call of the judge would meet
    the same answer, so none is retried, whatever the status (llama-cpp-python's server
    answers 500). The message tells the coordinator to run the judge's connection test."""


class MalformedResponse(ProviderError):
    """The provider answered 2xx but the body is not the protocol's shape.

    Retryable by design: in practice this is a flaky proxy or gateway (a cut or garbled JSON
    body, an HTML error page with status 200, an in-band error object) and a second attempt
    usually succeeds. The caller's attempt limit bounds the cost when it does not.
    """

    retryable = True


@runtime_checkable
class JudgeClient(Protocol):
    def complete(self, request: JudgeRequest) -> JudgeReply: ...


def verdict_json_schema(criteria: Sequence[CriterionSpec]) -> dict[str, Any]:
    """JSON Schema of a verdict: {criterion key: {"score": int, "explanation": str}}.

    Every criterion is required and no other key is allowed, at both levels, which is what
    OpenAI's strict structured outputs demand and what `jury.verdicts.parse_verdict` checks.
    "score" comes before "explanation" (MedHELM's order: the score is not conditioned on a
    written rationale; constrained decoders generate properties in schema order).
    """
    properties: dict[str, Any] = {}
    for criterion in criteria:
        properties[criterion.key] = {
            "type": "object",
            "properties": {
                "score": {
                    "type": "integer",
                    "minimum": criterion.scale_min,
                    "maximum": criterion.scale_max,
                    "description": f"{criterion.label}: an integer from {criterion.scale_min} "
                    f"to {criterion.scale_max}",
                },
                "explanation": {"type": "string"},
            },
            "required": ["score", "explanation"],
            "additionalProperties": False,
        }
    return {
        "type": "object",
        "properties": properties,
        "required": [c.key for c in criteria],
        "additionalProperties": False,
    }


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `Retry-After` as seconds or an HTTP date.

    Returns None when neither header is present or parseable; never negative.
    """
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms) / 1000.0
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return max(0.0, value)
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        value = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        current = time.time() if now is None else now
        return max(0.0, when.timestamp() - current)
    return max(0.0, value) if math.isfinite(value) else None


# Key-shaped tokens that providers echo back (OpenAI's 401 body quotes a masked key such as
# "sk-proj-ab***********wxyz"); removed from any text that goes into an exception message.
_KEY_SHAPED = re.compile(r"\b(?:sk|pk|rk|key)-[A-Za-z0-9_\-\*\.]{4,}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")
REASON_CHARS = 200


def redact(text: str, secret: str | None, *, limit: int = REASON_CHARS) -> str:
    """`text` without the secret (or any key-shaped token) or control characters, on one
    line, cut to `limit` characters."""
    if secret:
        text = text.replace(secret, "[redacted]")
    text = _KEY_SHAPED.sub("[redacted]", text)
    text = " ".join(_CONTROL.sub(" ", text).split())
    if len(text) > limit:
        text = text[:limit] + "..."
    return text


def provider_message(text: str) -> str:
    """The provider's own error message in an error body: `error.message` (OpenAI,
    Anthropic), `error` as a string (Ollama, TGI) or a top-level `message` (vLLM); "" when
    the body holds none (an HTML page, a proxy's text), so nothing else of it is kept."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return ""
    if not isinstance(data, dict):
        return ""
    error = data.get("error")
    if isinstance(error, dict):
        error = error.get("message")
    if isinstance(error, str):
        return error
    message = data.get("message")
    return message if isinstance(message, str) else ""


def error_param(text: str) -> str:
    """The request field an OpenAI-style error body blames (`error.param`), or ""."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return ""
    error = data.get("error") if isinstance(data, dict) else None
    param = error.get("param") if isinstance(error, dict) else None
    return param if isinstance(param, str) else ""


def map_sdk_exception(
    exc: BaseException, *, sdk: Any, label: str, secret: str | None, mode: str = ""
) -> ProviderError | None:
    """The ProviderError for an exception raised by the openai or anthropic SDK (or None).

    Both SDKs share one exception layout (APITimeoutError < APIConnectionError < APIError,
    APIStatusError with .response), so `sdk` is the imported module. The message is built
    here from the status and the provider's redacted error message, never from str(exc):
    SDK messages embed the response body, which may quote the key.
    """
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderTimeout(f"{label}: no response within the timeout")
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__
        detail = f" ({type(cause).__name__}: {redact(str(cause), secret)})" if cause else ""
        return ConnectionFailed(f"{label}: connection failed{detail}")
    if isinstance(exc, sdk.APIStatusError):
        response = exc.response
        try:
            text = response.text
        except Exception:  # the body may be unreadable; the status still says enough
            text = ""
        return status_error(
            exc.status_code,
            response.headers,
            text,
            label=label,
            secret=secret,
            reason=type(exc).__name__,
            mode=mode,
        )
    if isinstance(exc, sdk.APIError):  # e.g. APIResponseValidationError on a 2xx
        return MalformedResponse(f"{label}: {type(exc).__name__}")
    return None


def status_error(
    status: int,
    headers: Mapping[str, str],
    text: str,
    *,
    label: str,
    secret: str | None,
    reason: str,
    mode: str = "",
) -> ProviderError:
    """The ProviderError for a provider's non-2xx answer: 429 (rate limited) and 5xx are
    retryable and carry the wait the provider asked for; 408 is a timeout; any other status
    is a BadRequest that the same request would meet again. The message holds the status,
    `reason` and the provider's own error message, redacted (it may quote the key) and cut
    short; nothing else of the body, which may be anything the remote server chose to send.
    An error that names the request's structured-output `mode` (jury.providers.structured)
    is UnsupportedStructuredOutput, never retried."""
    message_text = provider_message(text)
    detail = redact(message_text, secret)
    if not detail and text.strip():
        detail = f"no error message in the body ({len(text)} characters, not kept)"
    reason = redact(reason, secret, limit=60)
    message = f"{label}: HTTP {status} {reason}" + (f": {detail}" if detail else "")
    named = f"{message_text} {error_param(text)}"
    if structured.names_the_mode(mode, status=status, message=named):
        # What to do first: a page that cuts a long reason still shows it.
        said = f"HTTP {status} {reason}" + (f": {detail}" if detail else "")
        return UnsupportedStructuredOutput(
            f"{label}: {structured.unsupported_hint(mode)} ({said})", status_code=status
        )
    if status == 429:
        return RateLimited(
            message, status_code=status, retry_after_seconds=parse_retry_after(headers)
        )
    if status == 408:
        return ProviderTimeout(message, status_code=status)
    if status >= 500:
        return ServerError(
            message, status_code=status, retry_after_seconds=parse_retry_after(headers)
        )
    return BadRequest(message, status_code=status)
