"""What one request to a provider did: the record both execution paths (single.py, engine.py)
keep for every attempt, so that a call's history (time, HTTP status, latency, tokens, the
reason it failed) survives retries, kills and resumes."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from jury.providers import base as providers

# The short names an attempt's failure is counted under (pages, CSV, `run_jury`).
_FAILURE_KINDS: tuple[tuple[type[Exception], str], ...] = (
    (providers.ProviderTimeout, "timeout"),
    (providers.RateLimited, "rate_limited"),
    (providers.ServerError, "server_error"),
    (providers.ConnectionFailed, "connection_failed"),
    (providers.NotAllowed, "not_allowed"),
    (providers.UnsupportedStructuredOutput, "unsupported_format"),
    (providers.BadRequest, "bad_request"),
    (providers.MalformedResponse, "malformed_response"),
    (providers.ProviderError, "provider_error"),
)


@dataclass(frozen=True)
class AttemptRecord:
    """One request sent for a call. `outcome` is "ok", "refused" or a failure kind."""

    started_at: datetime
    latency_ms: int
    outcome: str
    http_status: int | None = None
    error: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reason: str | None = None


def time_spent_ms(attempt_log: list[AttemptRecord]) -> int | None:
    """What a call's requests took in all (timeouts included: the server spent that time on
    it); None when nothing was sent."""
    if not attempt_log:
        return None
    return sum(record.latency_ms for record in attempt_log)


def failure_kind(exc: BaseException) -> str:
    """The short name a failed attempt is counted under; "unexpected" for a client's bug."""
    for kind, name in _FAILURE_KINDS:
        if isinstance(exc, kind):
            return name
    return "unexpected"


class AttemptClock:
    """Started when a request goes out: the wall time it began and the time it took."""

    def __init__(self) -> None:
        self.started_at = timezone.now()
        self._started = time.monotonic()

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self._started) * 1000)

    def replied(self, reply: providers.JudgeReply) -> AttemptRecord:
        return AttemptRecord(
            started_at=self.started_at,
            latency_ms=self.elapsed_ms(),
            outcome="refused" if reply.refused else "ok",
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            finish_reason=reply.finish_reason,
        )

    def failed(self, exc: BaseException, error: str) -> AttemptRecord:
        status = exc.status_code if isinstance(exc, providers.ProviderError) else None
        return AttemptRecord(
            started_at=self.started_at,
            latency_ms=self.elapsed_ms(),
            outcome=failure_kind(exc),
            http_status=status,
            error=error,
        )
