"""Pausing the calls of a provider that is down: a circuit breaker per endpoint, shared by
every worker, in the store of the judges' limits (Redis or the database, jury.limits).

rules.py holds every rule (pure); boards.py applies them to a store (database.py,
redis.py). The execution paths ask `wait_turn` before each request and `record` after it;
the run page and `run_jury` read `outages`.
"""

from __future__ import annotations

import threading
from typing import Any

from django.conf import settings

from jury import limits
from jury.breakers.boards import AsyncBoard, Board
from jury.breakers.database import DatabaseStore
from jury.breakers.redis import AsyncRedisStore, RedisStore
from jury.breakers.rules import (
    BreakerSettings,
    BreakerState,
    Signal,
    Turn,
    signal_of,
    spends_attempt,
    unreachable_reason,
)
from jury.models import Judge

__all__ = [
    "PROBE_MARGIN_SECONDS",
    "AsyncBoard",
    "Board",
    "BreakerSettings",
    "BreakerState",
    "Signal",
    "Turn",
    "async_board",
    "board",
    "breaker_settings",
    "endpoint_key",
    "signal_of",
    "spends_attempt",
    "unreachable_reason",
]

# A probe's turn lasts its request's timeout and this much more; then a worker that died
# holding it no longer blocks the next probe.
PROBE_MARGIN_SECONDS = 30.0

_redis_clients: dict[str, Any] = {}
_lock = threading.Lock()


def endpoint_key(judge: Judge) -> str:
    """What a judge's breaker is kept under: its base URL (judges on one server share it),
    or the provider's default endpoint."""
    endpoint = judge.endpoint.strip().rstrip("/")
    return endpoint or f"{judge.provider}:default"


def breaker_settings() -> BreakerSettings:
    """The breaker's thresholds (settings JURY_BREAKER_*)."""
    defaults = BreakerSettings()
    return BreakerSettings(
        threshold=int(getattr(settings, "JURY_BREAKER_THRESHOLD", defaults.threshold)),
        probe_seconds=float(
            getattr(settings, "JURY_BREAKER_PROBE_SECONDS", defaults.probe_seconds)
        ),
        forget_after_seconds=float(
            getattr(settings, "JURY_BREAKER_FORGET_SECONDS", defaults.forget_after_seconds)
        ),
    )


def board() -> Board:
    """The synchronous board of this process's limiter backend."""
    if limits.backend() != "redis":
        return Board(DatabaseStore(), settings=breaker_settings())
    url = limits.redis_url()
    with _lock:
        client = _redis_clients.get(url)
        if client is None:
            import redis

            client = _redis_clients[url] = redis.Redis.from_url(url)
    return Board(RedisStore(client, limits.key_prefix()), settings=breaker_settings())


def async_board(client: Any, prefix: str) -> AsyncBoard:
    """The board of a chunk engine, on its own redis.asyncio client."""
    return AsyncBoard(AsyncRedisStore(client, prefix), settings=breaker_settings())
