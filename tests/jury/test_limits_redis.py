"""The Redis limiter: a judge's concurrency cap across threads and processes, claims, and a
dead worker's slots and claims coming back (its requests-per-minute bucket: test_token_buckets).

Each test uses keys of its own (the `redis_limits` prefix) in Redis database 13."""

from __future__ import annotations

import asyncio
import functools
import multiprocessing
import threading
import time
from types import SimpleNamespace

import kombu.pools
import pytest
from celery import current_app

from jury import limits
from jury.execution.engine import Engine
from tests.support.threads import run_in_threads

pytestmark = pytest.mark.redis


def judge(pk: int = 1, *, max_concurrency: int = 2, rpm: int | None = None) -> SimpleNamespace:
    """What the limiter reads of a Judge."""
    return SimpleNamespace(pk=pk, max_concurrency=max_concurrency, requests_per_minute=rpm)


def test_backend_follows_the_broker_unless_a_setting_says_otherwise(settings):
    settings.JURY_LIMITER = "auto"
    settings.JURY_LIMITER_REDIS_URL = ""
    settings.CELERY_BROKER_URL = "sqla+sqlite:///x.sqlite3"
    assert limits.backend() == "database"
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/0"
    assert limits.backend() == "redis" and limits.redis_url() == "redis://127.0.0.1:6379/0"
    settings.JURY_LIMITER = "database"
    assert limits.backend() == "database"
    settings.JURY_LIMITER = "redis"
    settings.CELERY_BROKER_URL = "sqla+sqlite:///x.sqlite3"
    settings.JURY_LIMITER_REDIS_URL = "redis://127.0.0.1:6379/13"
    assert limits.backend() == "redis" and limits.redis_url() == "redis://127.0.0.1:6379/13"


def test_slots_claims_and_release(redis_limits):
    limiter = limits.redis_limiter()
    j = judge(max_concurrency=2)
    assert limiter.try_acquire(judge=j, call_id=1).ok
    assert limiter.try_acquire(judge=j, call_id=2).ok
    full = limiter.try_acquire(judge=j, call_id=3)
    assert not full.ok and not full.taken_elsewhere and full.wait_seconds > 0
    limiter.release_slot(judge_id=j.pk, call_id=1)
    assert limiter.try_acquire(judge=j, call_id=3).ok
    # call 2 is claimed by this thread: another claimant (another worker) is refused
    assert limiter.claim(claimant=limiter.claimant("other"), call_ids=[2, 4]) == {4}


def test_concurrency_cap_holds_across_threads(redis_limits):
    """Eight threads, a judge allowed three requests at once: never four."""
    import redis

    limiter = limits.redis_limiter()
    counter = redis.Redis.from_url(limits.redis_url())
    key = redis_limits + "in-flight"
    j = judge(max_concurrency=3)
    seen: list[int] = []
    lock = threading.Lock()

    def worker(first: int) -> None:
        for call_id in range(first, first + 15):
            while not limiter.try_acquire(judge=j, call_id=call_id).ok:
                time.sleep(0.002)
            now = counter.incr(key)
            with lock:
                seen.append(now)
            time.sleep(0.003)
            counter.decr(key)
            limiter.release_slot(judge_id=j.pk, call_id=call_id)

    run_in_threads([functools.partial(worker, 1000 * n) for n in range(8)], timeout=120)
    assert len(seen) == 120 and max(seen) <= 3
    assert limiter.client.llen(limiter.free_key(j.pk)) == 3  # every slot came back


def _engine_process(url: str, prefix: str, judge_id: int, rounds: int, done) -> None:
    """A worker process: its own owner and event loop, four coroutines taking the judge's
    tokens the way chunk runs do (BLMOVE, local handoff, give back)."""
    import redis

    limiter = limits.RedisLimiter(url, prefix)
    engine = Engine(limiter)
    counter = redis.Redis.from_url(url)
    seen: list[int] = []

    async def one() -> None:
        gate = engine.gate(judge_id)
        await gate.configure(size=3, rpm=0)
        for _ in range(rounds):
            waiter = asyncio.get_running_loop().create_future()
            token = await gate.acquire(waiter)
            seen.append(counter.incr(prefix + "in-flight"))
            await asyncio.sleep(0.003)
            counter.decr(prefix + "in-flight")
            await gate.release(token)

    async def run() -> None:
        await asyncio.gather(*(one() for _ in range(4)))

    asyncio.run_coroutine_threadsafe(run(), engine.loop).result(timeout=120)
    engine.stop()
    limiter.stop()
    done.put(seen)


def test_concurrency_cap_holds_across_processes(redis_limits):
    """Three worker processes with four requests each wanting a judge allowed three at once:
    never four in flight, and every token is back at the end."""
    # A forked child closes every kombu connection pool it inherits (kombu's after-fork
    # hook), and a pooled Redis channel an earlier test of the session left waiting on BRPOP
    # makes that close read a reply from the socket it shares with this process: the child
    # hung there (seen in a full run on Redis). Fork with no pooled broker connection.
    current_app.pool.force_close_all()
    kombu.pools.reset()
    # The closed pools stay the app's own until dropped: the next test of this process to
    # send a message would meet "Acquire on closed pool" (seen in a parallel run). Dropped,
    # the app makes new ones on first use.
    current_app._pool = None
    current_app.amqp._producer_pool = None
    context = multiprocessing.get_context("fork")
    done = context.Queue()
    procs = [
        context.Process(
            target=_engine_process,
            args=(limits.redis_url(), redis_limits, 7, 20, done),
            daemon=True,  # a child that hangs cannot hold the test session open at exit
        )
        for _ in range(3)
    ]
    for p in procs:
        p.start()
    try:
        seen = [x for _ in procs for x in done.get(timeout=180)]
        for p in procs:
            p.join(timeout=30)
            assert p.exitcode == 0
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
    assert len(seen) == 3 * 4 * 20 and max(seen) <= 3
    limiter = limits.redis_limiter()
    assert limiter.client.llen(limiter.free_key(7)) == 3


def test_a_dead_workers_slots_and_claims_come_back(redis_limits):
    """A worker holding both slots and a claim dies (its owner key expires): another worker
    gets the slots and the call, without waiting for any lease of the call's timeout."""
    dead = limits.RedisLimiter(limits.redis_url(), redis_limits)
    j = judge(pk=3, max_concurrency=2)
    assert dead.try_acquire(judge=j, call_id=41).ok
    assert dead.try_acquire(judge=j, call_id=42).ok
    alive = limits.redis_limiter()
    assert alive.try_acquire(judge=j, call_id=41).taken_elsewhere
    assert not alive.try_acquire(judge=j, call_id=43).ok  # both slots are held
    # The crash: no release, no more heartbeat; the owner key lapses (here: at once).
    dead.stop()
    assert alive.try_acquire(judge=j, call_id=41).ok  # the claim lapsed with its owner
    assert alive.try_acquire(judge=j, call_id=43).ok  # and both slots came back
    assert not alive.try_acquire(judge=j, call_id=44).ok


def test_shrinking_the_limit_while_slots_are_in_use(redis_limits):
    limiter = limits.redis_limiter()
    assert limiter.try_acquire(judge=judge(pk=5, max_concurrency=3), call_id=1).ok
    assert limiter.try_acquire(judge=judge(pk=5, max_concurrency=3), call_id=2).ok
    smaller = judge(pk=5, max_concurrency=1)
    assert not limiter.try_acquire(judge=smaller, call_id=3).ok  # two in use, one allowed
    limiter.release_slot(judge_id=5, call_id=1)
    assert not limiter.try_acquire(judge=smaller, call_id=3).ok  # still one in use
    limiter.release_slot(judge_id=5, call_id=2)
    assert limiter.try_acquire(judge=smaller, call_id=3).ok
    assert not limiter.try_acquire(judge=smaller, call_id=4).ok
    limiter.release_slot(judge_id=5, call_id=3)
    assert limiter.setup(judge_id=5, size=4) == 4  # growing adds tokens
