"""The database backend (the default, and what SQLite with the embedded broker uses).

A JudgeLease row per call in flight, capped at the judge's max_concurrency (and, when the
judge's server has an EndpointLimit, the leases of that origin at its max_concurrency), and a token
bucket in the judge's JudgeLimiter row. Each acquire is one short transaction that locks
that row (SELECT ... FOR UPDATE on PostgreSQL; SQLite's IMMEDIATE transactions serialise
writers the same way), so every call of every worker queues on one row: fine for a demo,
and the reason large runs use the Redis backend.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from jury.limits.base import BURST_SECONDS, SLOT_POLL_SECONDS, Acquired
from jury.limits.endpoints import EndpointSlots, endpoint_slots
from jury.models import EndpointLimit, Judge, JudgeCall, JudgeLease, JudgeLimiter

# A lease outlives the call's own timeout by this much; after that a crashed worker's slot
# is free again.
LEASE_MARGIN_SECONDS = 30.0


class DatabaseLimiter:
    """The Limiter on JudgeLease and JudgeLimiter rows."""

    def ensure(self, judge: Judge) -> None:
        JudgeLimiter.objects.get_or_create(judge=judge)

    def acquire(self, *, judge: Judge, call: JudgeCall) -> Acquired:
        now = timezone.now()
        server = endpoint_slots(judge)
        with transaction.atomic():
            # The server's row first, then the judge's: every worker locks in this order.
            origin = _locked_origin(server)
            limiter = _locked_limiter(judge)
            JudgeLease.objects.filter(judge=judge, expires_at__lt=now).delete()
            if JudgeLease.objects.filter(call=call).exists():
                return Acquired(ok=False, taken_elsewhere=True)
            if JudgeLease.objects.filter(judge=judge).count() >= judge.max_concurrency:
                return Acquired(ok=False, wait_seconds=SLOT_POLL_SECONDS)
            if origin is not None:
                JudgeLease.objects.filter(origin=origin.origin, expires_at__lt=now).delete()
                in_flight = JudgeLease.objects.filter(origin=origin.origin).count()
                if in_flight >= origin.max_concurrency:
                    return Acquired(ok=False, wait_seconds=SLOT_POLL_SECONDS)
            if judge.requests_per_minute:
                wait = _charge(limiter, judge.requests_per_minute, now)
                if wait:
                    return Acquired(ok=False, wait_seconds=wait)
            expires = now + timedelta(seconds=judge.request_timeout_seconds + LEASE_MARGIN_SECONDS)
            try:
                with transaction.atomic():
                    JudgeLease.objects.create(
                        judge=judge,
                        call=call,
                        expires_at=expires,
                        origin=origin.origin if origin is not None else "",
                    )
            except IntegrityError:
                return Acquired(ok=False, taken_elsewhere=True)
        return Acquired(ok=True)

    def release(self, *, call: JudgeCall) -> None:
        JudgeLease.objects.filter(call=call).delete()

    def abandon(self, *, judge: Judge, call: JudgeCall) -> None:
        """Nothing to drop: a call that waited holds no lease."""


def held_call_ids() -> set[int]:
    """The calls whose lease has not expired (a worker is sending them)."""
    return set(
        JudgeLease.objects.filter(expires_at__gt=timezone.now()).values_list("call_id", flat=True)
    )


def forget_stale(*, call_ids: Iterable[int]) -> None:
    """Drop the calls' leases (a resume: leases of workers that died must not block them)."""
    JudgeLease.objects.filter(call_id__in=list(call_ids)).delete()


def _locked_origin(server: EndpointSlots | None) -> EndpointLimit | None:
    """The server's limit row, locked until the transaction ends (None: no server limit)."""
    if server is None:
        return None
    return EndpointLimit.objects.select_for_update().filter(pk=server.pk).first()


def _locked_limiter(judge: Judge) -> JudgeLimiter:
    """The judge's limiter row, created if missing, locked until the transaction ends."""
    limiter = JudgeLimiter.objects.select_for_update().filter(judge=judge).first()
    if limiter is None:
        limiter, _ = JudgeLimiter.objects.get_or_create(judge=judge)
        limiter = JudgeLimiter.objects.select_for_update().get(pk=limiter.pk)
    return limiter


def _charge(limiter: JudgeLimiter, requests_per_minute: int, now: datetime) -> float:
    """Take one request from the bucket: 0 when taken, else the seconds until one is there."""
    rate = requests_per_minute / 60.0
    capacity = max(1.0, rate * BURST_SECONDS)
    if limiter.refilled_at is None:
        tokens = capacity
    else:
        elapsed = (now - limiter.refilled_at).total_seconds()
        tokens = min(capacity, limiter.tokens + elapsed * rate)
    taken = tokens >= 1.0
    limiter.tokens, limiter.refilled_at = (tokens - 1.0 if taken else tokens), now
    limiter.save(update_fields=["tokens", "refilled_at"])
    return 0.0 if taken else (1.0 - tokens) / rate
