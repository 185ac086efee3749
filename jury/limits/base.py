"""What every limiter backend offers the per-call path, and the values they share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from jury.models import Judge, JudgeCall

# A bucket holds at most ten seconds' worth of requests: bursts stay short, as providers'
# own per-minute limiters expect.
BURST_SECONDS = 10.0
# How long a caller that found no free slot waits before it asks again (non-blocking path).
SLOT_POLL_SECONDS = 0.02


@dataclass(frozen=True)
class Acquired:
    ok: bool
    wait_seconds: float = 0.0  # when not ok: how long before trying again makes sense
    taken_elsewhere: bool = False  # another worker holds this very call


class Limiter(Protocol):
    """One backend of a judge's limits: a slot per request in flight (at most the judge's
    max_concurrency) and a token bucket for its requests per minute, shared by every worker.
    `acquire` never blocks: the caller sleeps `wait_seconds` and asks again."""

    def ensure(self, judge: Judge) -> None:
        """Create the judge's shared state if the backend needs it up front."""

    def acquire(self, *, judge: Judge, call: JudgeCall) -> Acquired:
        """Try to take a slot (and a request of the bucket) for `call`."""

    def release(self, *, call: JudgeCall) -> None:
        """Give back the slot `acquire` took for `call`, and the call's claim."""

    def abandon(self, *, judge: Judge, call: JudgeCall) -> None:
        """A call that waited for a slot gives up: drop what it holds without a slot."""
