"""Per-judge concurrency and requests-per-minute limits that hold across every worker.

The state lives in the database (JudgeLimiter, JudgeLease), which every worker shares on
any broker: a lease per call in flight, capped at the judge's max_concurrency, and a token
bucket for requests per minute. Each acquire is one short transaction that locks the judge's
limiter row (SELECT ... FOR UPDATE on PostgreSQL; SQLite's IMMEDIATE transactions serialise
writers the same way).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from jury.models import Judge, JudgeCall, JudgeLease, JudgeLimiter

# A bucket holds at most ten seconds' worth of requests: bursts stay short, as providers'
# own per-minute limiters expect.
BURST_SECONDS = 10.0
# A lease outlives the call's own timeout by this much; after that a crashed worker's slot
# is free again.
LEASE_MARGIN_SECONDS = 30.0


@dataclass(frozen=True)
class Acquired:
    ok: bool
    wait_seconds: float = 0.0  # when not ok: how long before trying again makes sense
    taken_elsewhere: bool = False  # another worker holds this very call


def ensure_limiter(judge: Judge) -> None:
    JudgeLimiter.objects.get_or_create(judge=judge)


def acquire(*, judge: Judge, call: JudgeCall) -> Acquired:
    """Try to take a slot for `call`. Never blocks; the caller sleeps `wait_seconds`."""
    now = timezone.now()
    with transaction.atomic():
        limiter = JudgeLimiter.objects.select_for_update().filter(judge=judge).first()
        if limiter is None:
            limiter, _ = JudgeLimiter.objects.get_or_create(judge=judge)
            limiter = JudgeLimiter.objects.select_for_update().get(pk=limiter.pk)
        JudgeLease.objects.filter(judge=judge, expires_at__lt=now).delete()
        if JudgeLease.objects.filter(call=call).exists():
            return Acquired(ok=False, taken_elsewhere=True)
        if JudgeLease.objects.filter(judge=judge).count() >= judge.max_concurrency:
            return Acquired(ok=False, wait_seconds=0.02)
        if judge.requests_per_minute:
            rate = judge.requests_per_minute / 60.0
            capacity = max(1.0, rate * BURST_SECONDS)
            if limiter.refilled_at is None:
                tokens = capacity
            else:
                elapsed = (now - limiter.refilled_at).total_seconds()
                tokens = min(capacity, limiter.tokens + elapsed * rate)
            if tokens < 1.0:
                limiter.tokens, limiter.refilled_at = tokens, now
                limiter.save(update_fields=["tokens", "refilled_at"])
                return Acquired(ok=False, wait_seconds=(1.0 - tokens) / rate)
            limiter.tokens, limiter.refilled_at = tokens - 1.0, now
            limiter.save(update_fields=["tokens", "refilled_at"])
        expires = now + timedelta(seconds=judge.timeout_seconds + LEASE_MARGIN_SECONDS)
        try:
            with transaction.atomic():
                JudgeLease.objects.create(judge=judge, call=call, expires_at=expires)
        except IntegrityError:
            return Acquired(ok=False, taken_elsewhere=True)
    return Acquired(ok=True)


def release(*, call: JudgeCall) -> None:
    JudgeLease.objects.filter(call=call).delete()
