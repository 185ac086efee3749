"""Per-judge concurrency and requests-per-minute limits that hold across every worker.

Two backends behind one protocol (base.Limiter), chosen by `backend()`: database.py (rows,
the default) and redis.py (tokens and Lua scripts, when the Celery broker is Redis or
JURY_LIMITER=redis). The per-call path calls the functions below; the asyncio engine of
jury.execution works on the Redis keys directly (`redis_limiter()`, `lua()`).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings

from jury.limits import database
from jury.limits import redis as redis_backend
from jury.limits.base import BURST_SECONDS, SLOT_POLL_SECONDS, Acquired, Limiter
from jury.limits.database import DatabaseLimiter
from jury.limits.redis import (
    RedisLimiter,
    key_prefix,
    lua,
    redis_limiter,
    redis_url,
    stop_redis_limiter,
)
from jury.models import Judge, JudgeCall

__all__ = [
    "BURST_SECONDS",
    "SLOT_POLL_SECONDS",
    "Acquired",
    "DatabaseLimiter",
    "Limiter",
    "RedisLimiter",
    "abandon",
    "acquire",
    "backend",
    "current",
    "ensure_limiter",
    "forget_stale",
    "held_call_ids",
    "key_prefix",
    "lua",
    "redis_limiter",
    "redis_url",
    "release",
    "stop_redis_limiter",
]

_DATABASE = DatabaseLimiter()


def backend() -> str:
    """ "redis" or "database": where the limits of this process live."""
    choice = getattr(settings, "JURY_LIMITER", "auto")
    if choice == "database":
        return "database"
    if choice == "redis" or (choice == "auto" and redis_url()):
        return "redis"
    return "database"


def current() -> Limiter:
    """The limiter of this process's backend."""
    return redis_limiter() if backend() == "redis" else _DATABASE


def ensure_limiter(judge: Judge) -> None:
    current().ensure(judge)


def acquire(*, judge: Judge, call: JudgeCall) -> Acquired:
    """Try to take a slot for `call`. Never blocks; the caller sleeps `wait_seconds`."""
    return current().acquire(judge=judge, call=call)


def release(*, call: JudgeCall) -> None:
    """Give back the slot `acquire` took for `call` (and the call's claim)."""
    current().release(call=call)


def abandon(*, judge: Judge, call: JudgeCall) -> None:
    """A call that waited for a slot gives up (cancel, waited too long): drop its claim."""
    current().abandon(judge=judge, call=call)


def held_call_ids() -> set[int]:
    """The calls a live worker holds right now (claimed, or with a lease): the sweep leaves
    them alone, and the run page does not call them waiting."""
    if backend() == "redis":
        return redis_backend.held_call_ids()
    return database.held_call_ids()


def forget_stale(*, call_ids: Iterable[int]) -> None:
    """Before calls are sent again (a resume): leases of workers that died must not block
    them. Whatever the backend (leases may predate a switch to Redis, where claims of dead
    owners already count for nothing)."""
    database.forget_stale(call_ids=call_ids)
