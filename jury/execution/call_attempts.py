"""One call's attempts so far, on either execution path: requests sent, those counted
against the judge's max_attempts, the attempt log, the last failure, and how the call ends."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from jury import breakers
from jury.execution.attempts import AttemptClock, AttemptRecord, time_spent_ms
from jury.execution.retries import retry_delay
from jury.execution.storage import Outcome
from jury.models import JudgeCall
from jury.providers import base as providers


@dataclass
class CallAttempts:
    call_id: int
    max_attempts: int
    budget_seconds: float
    endpoint: str
    holder: str  # who takes the endpoint's probe when this call sends it
    attempts: int = 0  # requests sent
    spent: int = 0  # failed requests counted against max_attempts
    started: float = field(default_factory=time.monotonic)
    began_at: float = field(default_factory=time.time)  # wall clock, as the breakers keep it
    log: list[AttemptRecord] = field(default_factory=list)
    last_error: str = ""
    last_status: str = JudgeCall.Status.PROVIDER_ERROR
    rng: random.Random = field(default_factory=random.Random)

    def failed(
        self, exc: BaseException, clock: AttemptClock, breaker: breakers.BreakerState
    ) -> float | None:
        """Note a failed request (`breaker`: its endpoint's state after it); the backoff
        before the next try, or None when the call ends."""
        if not isinstance(exc, providers.ProviderError):  # a client's bug: never pending
            detail = providers.redact(str(exc), None)  # no key-shaped text, cut short
            reason = f"unexpected {type(exc).__name__}: {detail}"
            self.log.append(clock.failed(exc, reason))
            self.last_error = f"attempt {self.attempts}: {reason}"
            self.last_status = JudgeCall.Status.PROVIDER_ERROR
            return None
        self.log.append(clock.failed(exc, str(exc)))
        self.last_error = f"attempt {self.attempts}: {exc}"
        self.last_status = (
            JudgeCall.Status.TIMEOUT
            if isinstance(exc, providers.ProviderTimeout)
            else JudgeCall.Status.PROVIDER_ERROR
        )
        if not exc.retryable:
            return None
        if not breakers.spends_attempt(breakers.signal_of(exc), breaker):
            return 0.0  # the provider is down: its breaker paces the next try
        self.spent += 1
        return retry_delay(
            spent_attempts=self.spent,
            max_attempts=self.max_attempts,
            retry_after=exc.retry_after_seconds,
            elapsed_seconds=time.monotonic() - self.started,
            budget_seconds=self.budget_seconds,
            rng=self.rng,
        )

    def gave_up(self, reason: str, breaker: breakers.BreakerState) -> None:
        """The provider stayed unreachable for longer than the judge's retry budget."""
        self.last_status = JudgeCall.Status.PROVIDER_ERROR
        self.last_error = f"{reason}; last error: {breaker.last_error}"

    def answered(self, reply: providers.JudgeReply) -> Outcome:
        return Outcome(
            call_id=self.call_id,
            status=JudgeCall.Status.REFUSED if reply.refused else JudgeCall.Status.OK,
            reply=reply,
            attempts=self.attempts,
            latency_ms=self.log[-1].latency_ms,
            attempt_log=self.log,
        )

    def ended(self) -> Outcome:
        """The call ends without an answer: its last failure, and the time its requests took."""
        return Outcome(
            call_id=self.call_id,
            status=self.last_status,
            error=self.last_error,
            attempts=self.attempts,
            latency_ms=time_spent_ms(self.log),
            attempt_log=self.log,
        )

    def left_pending(self) -> Outcome:
        return Outcome(
            call_id=self.call_id, status=None, attempts=self.attempts, attempt_log=self.log
        )
