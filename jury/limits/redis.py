"""The Redis backend (when the Celery broker is Redis, or JURY_LIMITER=redis).

A judge's concurrency is a list of interchangeable tokens, one per request allowed in
flight: a worker takes one with LMOVE (the asyncio engine with BLMOVE: blocked workers are
served first come, first served, and wake the moment a token is put back) into a list of
its own, and puts it back when the request has been answered. Requests per minute are a
token bucket in a hash. A call is claimed (a hash: call -> claimant) so that two workers
never run the same call at once. Every decision that reads and writes is one Lua script
(lua/*.lua), atomic in Redis; time is Redis's.

Crash safety: each worker process (an "owner") keeps a key alive with a short TTL from a
heartbeat thread. Tokens in the list of an owner whose key has expired go back to the free
list, and its claims no longer count, so a killed worker's slots and calls come back within
OWNER_TTL_SECONDS, not after a lease of the call's whole timeout. The scripts derive a
judge's keys from a prefix, so they assume one Redis server (not Cluster).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any

from django.conf import settings

from jury.limits.base import BURST_SECONDS, SLOT_POLL_SECONDS, Acquired
from jury.limits.endpoints import EndpointSlots, endpoint_slots
from jury.models import Judge, JudgeCall

log = logging.getLogger(__name__)

# An owner is dead when its key was not renewed for this long. Long enough that a worker
# starved of CPU for a few seconds keeps its slots; short enough that a killed worker's
# calls are taken over soon.
OWNER_TTL_SECONDS = 10
HEARTBEAT_SECONDS = 2.0
# Claims of dead owners are swept from the claims hash this often (they never block
# anything: a claim counts only while its owner lives; this only bounds the hash's size).
CLAIM_SWEEP_SECONDS = 60.0

SCRIPT_NAMES = (
    "try_acquire",
    "release",
    "setup",
    "charge",
    "claim",
    "unclaim",
    "heartbeat",
    "held",
)


@cache
def lua(name: str) -> str:
    """A script's source: the shared functions (lua/common.lua), then the script itself.
    The asyncio engine registers them on its own client."""
    if name not in SCRIPT_NAMES:
        raise KeyError(name)
    folder = resources.files("jury.limits").joinpath("lua")
    return folder.joinpath("common.lua").read_text() + folder.joinpath(f"{name}.lua").read_text()


def redis_url() -> str:
    """The Redis the limiter uses: JURY_LIMITER_REDIS_URL, else a Redis Celery broker."""
    url = getattr(settings, "JURY_LIMITER_REDIS_URL", "") or ""
    if url:
        return url
    broker = str(getattr(settings, "CELERY_BROKER_URL", "") or "")
    return broker if broker.startswith(("redis://", "rediss://", "unix://")) else ""


def key_prefix() -> str:
    """The prefix of every key the limiter writes (JURY_LIMITER_PREFIX)."""
    return str(getattr(settings, "JURY_LIMITER_PREFIX", "") or "medhelm:jury:limits:")


class RedisLimiter:
    """The Redis backend of one process: its owner id, heartbeat thread and scripts.

    Synchronous (redis-py) for the per-call path (the Limiter methods); the asyncio engine
    of jury.execution uses the same keys and scripts through `redis.asyncio` (see
    `free_key`, `inuse_key`) and claims whole chunks (`claim`, `unclaim`).
    """

    def __init__(self, url: str, prefix: str) -> None:
        import redis

        self.url = url
        self.prefix = prefix
        self.pid = os.getpid()
        self.owner = f"{socket.gethostname()}:{self.pid}:{uuid.uuid4().hex[:12]}"
        self.client = redis.Redis.from_url(url)
        self.scripts = {name: self.client.register_script(lua(name)) for name in SCRIPT_NAMES}
        self.judges: set[str] = set()  # the token pools this owner used (judges, endpoints)
        # The endpoint pool whose token a call holds (the per-call path), given back with it.
        self.endpoint_taken: dict[int, str] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._last_sweep = 0.0
        self.heartbeat()  # alive before the first token is taken
        self._thread = threading.Thread(
            target=self._beat, name="jury-limiter-heartbeat", daemon=True
        )
        self._thread.start()

    # keys the asyncio engine uses directly; a pool is a judge's id or an endpoint's "e<id>"
    def judge_prefix(self, judge_id: int | str) -> str:
        return f"{self.prefix}j:{judge_id}:"

    def free_key(self, judge_id: int | str) -> str:
        return self.judge_prefix(judge_id) + "free"

    def inuse_key(self, judge_id: int | str) -> str:
        return self.judge_prefix(judge_id) + "inuse:" + self.owner

    def claimant(self, tag: str) -> str:
        """A claimant id of this owner: '<owner>#<tag>' (one per thread or per chunk run)."""
        return f"{self.owner}#{tag}"

    def thread_claimant(self) -> str:
        """The claimant of the per-call path: this owner's current thread."""
        return self.claimant(f"t{threading.get_ident()}")

    def remember(self, judge_id: int | str) -> None:
        with self._lock:
            self.judges.add(str(judge_id))

    # heartbeat
    def heartbeat(self) -> None:
        with self._lock:
            judges = sorted(self.judges)
        sweep = time.monotonic() - self._last_sweep > CLAIM_SWEEP_SECONDS
        if sweep:
            self._last_sweep = time.monotonic()
        self.scripts["heartbeat"](
            args=[self.prefix, self.owner, OWNER_TTL_SECONDS, "1" if sweep else "0", *judges]
        )

    def _beat(self) -> None:
        while not self._stopped.wait(HEARTBEAT_SECONDS):
            try:
                self.heartbeat()
            except Exception:  # Redis away for a moment: try again at the next beat
                log.warning("jury limiter heartbeat failed", exc_info=True)

    def stop(self) -> None:
        """Stop the heartbeat and drop the owner key (tests; a worker just exits)."""
        self._stopped.set()
        self._thread.join(timeout=5)
        self.client.delete(f"{self.prefix}owner:{self.owner}")

    # the Limiter protocol (the per-call, synchronous path)
    def ensure(self, judge: Judge) -> None:
        """Nothing up front: the first script that needs the judge's keys creates them."""

    def acquire(self, *, judge: Judge, call: JudgeCall) -> Acquired:
        return self.try_acquire(judge=judge, call_id=call.pk, server=endpoint_slots(judge))

    def release(self, *, call: JudgeCall) -> None:
        self.release_slot(judge_id=call.judge_id, call_id=call.pk)

    def abandon(self, *, judge: Judge, call: JudgeCall) -> None:
        self.unclaim(claimant=self.thread_claimant(), call_ids=[call.pk])

    def try_acquire(
        self, *, judge: Judge, call_id: int, server: EndpointSlots | None = None
    ) -> Acquired:
        """`acquire` by call id (`judge` needs pk, max_concurrency, requests_per_minute), with
        a slot of the judge's server too when it has a limit."""
        self.remember(judge.pk)
        if server is not None:
            self.remember(server.pool)
        taken, wait_ms = self.scripts["try_acquire"](
            args=[
                self.prefix,
                judge.pk,
                judge.max_concurrency,
                judge.requests_per_minute or 0,
                BURST_SECONDS,
                self.owner,
                self.thread_claimant(),
                call_id,
                *([server.pool, server.size] if server is not None else []),
            ]
        )
        if taken == 1:
            if server is not None:
                with self._lock:
                    self.endpoint_taken[call_id] = server.pool
            return Acquired(ok=True)
        if taken == -1:
            return Acquired(ok=False, taken_elsewhere=True)
        return Acquired(ok=False, wait_seconds=SLOT_POLL_SECONDS if wait_ms < 0 else wait_ms / 1000)

    def release_slot(self, *, judge_id: int, call_id: int) -> None:
        """`release` by ids."""
        with self._lock:
            pool = self.endpoint_taken.pop(call_id, "")
        self.scripts["release"](
            args=[self.prefix, judge_id, self.owner, self.thread_claimant(), call_id, pool]
        )

    # batch claims (chunk runs)
    def claim(self, *, claimant: str, call_ids: Iterable[int]) -> set[int]:
        ids = [str(i) for i in call_ids]
        if not ids:
            return set()
        got = self.scripts["claim"](args=[self.prefix, claimant, *ids])
        return {int(x) for x in got}

    def unclaim(self, *, claimant: str, call_ids: Iterable[int]) -> None:
        ids = [str(i) for i in call_ids]
        if ids:
            self.scripts["unclaim"](args=[self.prefix, claimant, *ids])

    def setup(self, *, judge_id: int, size: int) -> int:
        """Create or resize a judge's tokens; returns how many are free."""
        self.remember(judge_id)
        return int(self.scripts["setup"](args=[self.prefix, judge_id, size, self.owner]))


@cache
def _reader(url: str) -> Any:
    """A plain client and the `held` script for readers that are not workers (the sweep, the
    run page): no owner, no heartbeat thread."""
    import redis

    client = redis.Redis.from_url(url)
    return client.register_script(lua("held"))


def held_call_ids() -> set[int]:
    """The calls a live worker has claimed (running, or waiting for a slot)."""
    held = _reader(redis_url())(args=[key_prefix()])
    return {int(x) for x in held}


_limiter: RedisLimiter | None = None
_limiter_lock = threading.Lock()


def redis_limiter() -> RedisLimiter:
    """This process's RedisLimiter (a forked child makes its own: the owner is a process)."""
    global _limiter
    with _limiter_lock:
        wanted = (redis_url(), key_prefix())
        current = _limiter
        if current is None or current.pid != os.getpid() or (current.url, current.prefix) != wanted:
            if current is not None and current.pid == os.getpid():
                current.stop()  # settings changed: this owner's heartbeat ends
            _limiter = RedisLimiter(*wanted)
        return _limiter


def stop_redis_limiter() -> None:
    """Stop this process's RedisLimiter, if any (tests: the next one is a new owner)."""
    global _limiter
    with _limiter_lock:
        limiter, _limiter = _limiter, None
    if limiter is not None and limiter.pid == os.getpid():
        limiter.stop()
