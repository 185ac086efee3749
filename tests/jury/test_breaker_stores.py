"""The breakers as workers share them (jury.breakers.boards on the database and Redis
stores): a change lost to another worker's is computed again, so one call probes at a time
whichever process asks; the clock is injected."""

from __future__ import annotations

import asyncio

import pytest

from jury.breakers import AsyncBoard, Board, Signal, Turn
from jury.breakers.database import DatabaseStore
from jury.breakers.redis import AsyncRedisStore, RedisStore
from jury.breakers.rules import BreakerSettings
from tests.jury.conftest import LIMITS_REDIS_URL
from tests.support.threads import run_in_threads

pytestmark = pytest.mark.django_db

SETTINGS = BreakerSettings(threshold=2, probe_seconds=5.0)
ENDPOINT = "http://127.0.0.1:9/v1"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def no_sleep(seconds: float) -> None:
    raise AssertionError("a board asked to sleep where it should have answered")


@pytest.fixture(params=["database", pytest.param("redis", marks=pytest.mark.redis)])
def store(request):
    if request.param == "database":
        return DatabaseStore()
    prefix = request.getfixturevalue("redis_limits")
    import redis

    return RedisStore(redis.Redis.from_url(LIMITS_REDIS_URL), prefix)


def boards(store, clock: Clock) -> tuple[Board, Board]:
    """Two workers' boards on one store."""
    return Board(store, settings=SETTINGS, clock=clock), Board(
        store, settings=SETTINGS, clock=clock
    )


def turn(board: Board, holder: str) -> Turn | None:
    ask = {"holder": holder, "lease_seconds": 60.0, "budget_seconds": 900.0, "began_at": 0.0}
    return board.wait_turn(ENDPOINT, **ask, sleep=no_sleep, cancelled=lambda: True)[0]


def test_workers_share_an_open_breaker_and_one_of_them_probes(store):
    clock = Clock()
    first, second = boards(store, clock)
    first.record(ENDPOINT, holder="a", signal=Signal.DOWN, error="refused")
    assert not second.outages([ENDPOINT])
    second.record(ENDPOINT, holder="b", signal=Signal.DOWN, error="refused")
    assert set(first.outages([ENDPOINT, "http://elsewhere/v1"])) == {ENDPOINT}
    assert turn(first, "a") is None  # waits (cancelled here instead of sleeping)
    clock.now += 5
    assert turn(first, "a") is Turn.PROBE
    assert turn(second, "b") is None
    second.record(ENDPOINT, holder="a", signal=Signal.UP, error="")
    assert turn(first, "c") is Turn.SEND and not first.outages([ENDPOINT])


def test_a_change_computed_on_an_old_state_is_refused(store):
    token, state = store.load(ENDPOINT)
    assert store.save(ENDPOINT, token, state.__class__(failures=1))
    assert not store.save(ENDPOINT, token, state.__class__(failures=7))
    assert store.load(ENDPOINT)[1].failures == 1


@pytest.mark.redis
def test_the_event_loop_board_shares_the_state_of_the_redis_store(redis_limits):
    import redis
    import redis.asyncio

    clock = Clock()
    sync = Board(
        RedisStore(redis.Redis.from_url(LIMITS_REDIS_URL), redis_limits),
        settings=SETTINGS,
        clock=clock,
    )

    async def scenario() -> list[Turn | None]:
        client = redis.asyncio.Redis.from_url(LIMITS_REDIS_URL)
        board = AsyncBoard(AsyncRedisStore(client, redis_limits), settings=SETTINGS, clock=clock)
        ask = {"holder": "engine", "lease_seconds": 60.0, "budget_seconds": 900.0, "began_at": 0.0}
        try:
            for _ in range(2):
                await board.record(ENDPOINT, holder="engine", signal=Signal.DOWN, error="reset")
            waited = (await board.wait_turn(ENDPOINT, **ask, cancelled=lambda: True))[0]
            clock.now += 5
            probed = (await board.wait_turn(ENDPOINT, **ask, cancelled=lambda: True))[0]
            return [waited, probed]
        finally:
            await client.aclose()

    # In a thread of its own: a session's Playwright (sync API) leaves an event loop running
    # in the main thread, where asyncio.run refuses to start (seen in a parallel run).
    [turns] = run_in_threads([lambda: asyncio.run(scenario())], timeout=30)
    assert turns == [None, Turn.PROBE]
    assert turn(sync, "worker") is None  # the engine holds the probe
