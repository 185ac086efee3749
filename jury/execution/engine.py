"""The chunk engine: one asyncio event loop per worker process, in a thread of its own,
running the provider requests of every chunk task of the process, and its side of the
judges' Redis tokens."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from jury import breakers, limits
from jury.execution.attempts import AttemptClock
from jury.execution.call_attempts import CallAttempts
from jury.execution.clients import AsyncProvider, client_key
from jury.execution.retries import max_wait_for_slot_seconds
from jury.execution.storage import Outcome
from jury.limits.endpoints import EndpointSlots
from jury.models import Judge, JudgeCall
from jury.providers import base as providers

log = logging.getLogger(__name__)

# How long one BLMOVE waits for a judge's token before the fetcher looks at its waiters
# again (and frees tokens dead workers still hold).
FETCH_BLOCK_SECONDS = 1.0


class LeftPending(Exception):
    """A waiting call gives up its turn (run cancelled, or no slot for too long)."""


class _Token:
    """One of a judge's Redis tokens while this process holds it."""

    __slots__ = ("uses",)

    def __init__(self) -> None:
        self.uses = 0


class Gate:
    """This process's side of one judge's Redis tokens: local waiters, first come first
    served, and one fetcher that takes tokens for them with BLMOVE. Blocked clients of Redis
    are served in the order they blocked, so the workers of a machine (or of several) share
    a judge's slots fairly, and a token put back wakes a waiter at once: no polling.

    A token whose request has been answered goes straight to the next local waiter, up to
    HANDOFF_LIMIT requests in a row, and then back to Redis, where the other workers' blocked
    fetchers get their turn. The direct handoff spares two Redis round trips and two turns
    of busy event loops per request (the slot would sit idle meanwhile); the limit keeps one
    busy worker from keeping a judge's slots to itself."""

    HANDOFF_LIMIT = 8

    def __init__(self, engine: Engine, judge_id: int | str) -> None:
        self.engine = engine
        self.judge_id = judge_id
        self.size = 0
        self.rpm = 0
        self.waiters: deque[asyncio.Future] = deque()
        self.fetching = False
        self.free_key = engine.limiter.free_key(judge_id)
        self.inuse_key = engine.limiter.inuse_key(judge_id)

    async def configure(self, *, size: int, rpm: int) -> None:
        if size != self.size:
            await self.engine.script("setup", self.judge_id, size, self.engine.limiter.owner)
            self.engine.limiter.remember(self.judge_id)
            self.size = size
        self.rpm = rpm

    async def acquire(self, waiter: asyncio.Future, *, retry: bool = False) -> _Token:
        """Wait for a token (the caller made `waiter`; failing it gives up the turn). A retry
        goes first: it has waited its turn once already, and its chunk (its task) cannot end
        before it does."""
        if retry:
            self.waiters.appendleft(waiter)
        else:
            self.waiters.append(waiter)
        if not self.fetching:
            self.fetching = True
            asyncio.get_running_loop().create_task(self._fetch())
        token: _Token = await waiter
        try:
            while self.rpm:
                wait_ms = await self.engine.script(
                    "charge", self.judge_id, self.rpm, limits.BURST_SECONDS
                )
                if not wait_ms:
                    break
                await asyncio.sleep(int(wait_ms) / 1000)
        except BaseException:
            await self.give_back()
            raise
        return token

    def _next_waiter(self) -> asyncio.Future | None:
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():  # not given up
                return waiter
        return None

    async def release(self, token: _Token) -> None:
        token.uses += 1
        if token.uses < self.HANDOFF_LIMIT:
            waiter = self._next_waiter()
            if waiter is not None:
                waiter.set_result(token)
                return
        await self.give_back()

    async def give_back(self) -> None:
        await self.engine.script("release", self.judge_id, self.engine.limiter.owner, "", "")

    async def _fetch(self) -> None:
        redis = self.engine.redis
        try:
            while self.waiters:
                if self.waiters[0].done():  # gave up its turn
                    self.waiters.popleft()
                    continue
                try:
                    taken = await redis.blmove(
                        self.free_key,
                        self.inuse_key,
                        FETCH_BLOCK_SECONDS,
                        src="LEFT",
                        dest="RIGHT",
                    )
                except Exception:
                    log.warning("jury limiter: taking a token failed; retrying", exc_info=True)
                    await asyncio.sleep(1.0)
                    continue
                if taken is None:
                    # Nothing came back for a second: free what dead workers still hold.
                    await self.engine.script(
                        "setup", self.judge_id, self.size, self.engine.limiter.owner
                    )
                    continue
                waiter = self._next_waiter()
                if waiter is not None:
                    waiter.set_result(_Token())
                else:
                    await self.give_back()
        finally:
            self.fetching = False


@dataclass
class Job:
    call_id: int
    judge: Judge
    request: providers.JudgeRequest
    max_attempts: int
    server: EndpointSlots | None = None  # the limit of the judge's server, if it has one


@dataclass
class ChunkState:
    cancelled: bool = False
    waiting: set[asyncio.Future] = field(default_factory=set)

    def cancel(self) -> None:
        self.cancelled = True
        for waiter in list(self.waiting):
            if not waiter.done():
                waiter.set_exception(LeftPending())


class Engine:
    """One asyncio event loop per worker process, in a thread of its own, running the
    provider requests of every chunk task of the process. HTTP sessions and Redis connections
    live on this loop and are reused by every chunk."""

    def __init__(self, limiter: limits.RedisLimiter) -> None:
        self.limiter = limiter
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self.providers: dict[tuple, AsyncProvider] = {}
        self.gates: dict[int | str, Gate] = {}  # by pool: a judge's id, an endpoint's "e<id>"
        self.redis: Any = None
        self.scripts: dict[str, Any] = {}
        self.breakers: breakers.AsyncBoard
        ready = threading.Event()
        self.thread = threading.Thread(
            target=self.run_loop, args=(ready,), name="jury-engine", daemon=True
        )
        self.thread.start()
        ready.wait()

    def stop(self) -> None:
        """Close the HTTP sessions and Redis connections and end the loop's thread (tests; a
        worker process just exits)."""

        async def close() -> None:
            # A fetcher blocked in BLMOVE with no one left waiting ends within its timeout
            # and gives back what it took. Closing the connection under it instead could
            # lose a token Redis had just moved to this owner (back only when the owner's
            # heartbeat lapses).
            deadline = time.monotonic() + FETCH_BLOCK_SECONDS + 1.0
            while any(g.fetching for g in self.gates.values()) and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            for provider in self.providers.values():
                await provider.aclose()
            await self.redis.aclose()

        if self.thread.is_alive():
            asyncio.run_coroutine_threadsafe(close(), self.loop).result(timeout=10)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)

    def run_loop(self, ready: threading.Event) -> None:
        import redis.asyncio

        asyncio.set_event_loop(self.loop)
        self.redis = redis.asyncio.Redis.from_url(self.limiter.url)
        self.scripts = {
            name: self.redis.register_script(limits.lua(name))
            for name in ("setup", "charge", "release")
        }
        self.breakers = breakers.async_board(self.redis, self.limiter.prefix)
        ready.set()
        self.loop.run_forever()

    async def script(self, name: str, *args: Any) -> Any:
        return await self.scripts[name](args=[self.limiter.prefix, *args])

    def provider(self, judge: Judge) -> AsyncProvider:
        key = client_key(judge)
        found = self.providers.get(key)
        if found is None:
            found = self.providers[key] = AsyncProvider(judge, key[4])
        return found

    async def _take_slots(
        self, job: Job, state: ChunkState, *, retry: bool
    ) -> list[tuple[Gate, _Token]] | None:
        """A token of the judge's and, when its server has a limit, one of the server's (in
        that order, everywhere: no two waiters wait for each other), within the slot wait;
        None when the call gives up its turn (run cancelled, waited too long: logged)."""
        loop = asyncio.get_running_loop()
        gates = [self.gate(job.judge.pk)]
        if job.server is not None:
            gates.append(self.gate(job.server.pool))
        started = time.monotonic()
        deadline = started + max_wait_for_slot_seconds()
        taken: list[tuple[Gate, _Token]] = []
        for gate in gates:
            waiter = loop.create_future()
            state.waiting.add(waiter)
            timer = loop.call_later(
                max(0.0, deadline - time.monotonic()),
                lambda w=waiter: w.done() or w.set_exception(LeftPending()),
            )
            try:
                taken.append((gate, await gate.acquire(waiter, retry=retry)))
            except LeftPending:
                await self._release(taken)
                if not state.cancelled:
                    log.warning(
                        "call %s waited %.0f s for a slot of judge %s; left pending for the sweep",
                        job.call_id,
                        time.monotonic() - started,
                        job.judge,
                    )
                return None
            finally:
                timer.cancel()
                state.waiting.discard(waiter)
        return taken

    async def _release(self, slots: list[tuple[Gate, _Token]]) -> None:
        for gate, token in reversed(slots):
            await gate.release(token)

    def gate(self, judge_id: int | str) -> Gate:
        found = self.gates.get(judge_id)
        if found is None:
            found = self.gates[judge_id] = Gate(self, judge_id)
        return found

    def run_chunk(
        self, jobs: Sequence[Job], state: ChunkState, put: Callable[[Outcome], None]
    ) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(self._run_chunk(jobs, state, put), self.loop)

    def cancel(self, state: ChunkState) -> None:
        self.loop.call_soon_threadsafe(state.cancel)

    async def _run_chunk(
        self, jobs: Sequence[Job], state: ChunkState, put: Callable[[Outcome], None]
    ) -> None:
        for judge in {job.judge.pk: job.judge for job in jobs}.values():
            await self.gate(judge.pk).configure(
                size=judge.max_concurrency, rpm=judge.requests_per_minute or 0
            )
        for server in {job.server.pool: job.server for job in jobs if job.server}.values():
            await self.gate(server.pool).configure(size=server.size, rpm=0)

        async def one(job: Job) -> None:
            try:
                outcome = await self._run_call(job, state)
            except Exception:  # never lose a call: it stays pending for a resume
                log.exception("jury call %s failed in the engine; left pending", job.call_id)
                outcome = Outcome(call_id=job.call_id, status=None)
            put(outcome)

        await asyncio.gather(*(one(job) for job in jobs))

    async def _run_call(self, job: Job, state: ChunkState) -> Outcome:
        try:
            provider = self.provider(job.judge)
        except providers.NotAllowed as exc:  # the rules changed since the chunk began
            return Outcome(
                call_id=job.call_id, status=JudgeCall.Status.PROVIDER_ERROR, error=str(exc)
            )
        call = CallAttempts(
            call_id=job.call_id,
            max_attempts=job.max_attempts,
            budget_seconds=job.judge.retry_budget_seconds,
            endpoint=breakers.endpoint_key(job.judge),
            holder=self.limiter.claimant(f"call{job.call_id}"),
        )
        while True:
            stopped = await self._wait_for_provider(call, job, state)
            if stopped is not None:
                return stopped
            slots = await self._take_slots(job, state, retry=call.attempts > 0)
            if slots is None:
                await self.breakers.release(call.endpoint, holder=call.holder)
                return call.left_pending()
            call.attempts += 1
            clock = AttemptClock()
            try:
                reply = await provider.complete(job.request)
            except Exception as exc:  # a client's bug too: it must not leave the call pending
                after = await self._after_request(call, slots, breakers.signal_of(exc), str(exc))
                delay = call.failed(exc, clock, after)
                if delay is None:
                    return call.ended()
                await asyncio.sleep(delay)
                continue
            call.log.append(clock.replied(reply))
            await self._after_request(call, slots, breakers.Signal.UP, "")
            return call.answered(reply)

    async def _after_request(
        self, call: CallAttempts, slots: list[tuple[Gate, _Token]], signal: Any, error: str
    ) -> breakers.BreakerState:
        """Give the slots back and tell the breaker how the request went. The request is
        made (and paid for): a limiter or breaker store that cannot be reached right now (its
        Redis restarting) must not throw its answer away, or the sweep would ask, and pay,
        again. A token not given back returns to the pool once this process's owner key
        lapses or the store lost its data; a breaker that missed one signal sees the next."""
        for gate, token in reversed(slots):
            try:
                await gate.release(token)
            except Exception:
                log.warning(
                    "jury limiter: giving back a slot of %s failed", gate.judge_id, exc_info=True
                )
        try:
            return await self.breakers.record(
                call.endpoint, holder=call.holder, signal=signal, error=error
            )
        except Exception:
            log.warning(
                "jury breaker: recording %s for %s failed", signal, call.endpoint, exc_info=True
            )
            return breakers.BreakerState()

    async def _wait_for_provider(
        self, call: CallAttempts, job: Job, state: ChunkState
    ) -> Outcome | None:
        """Wait while the call's provider is paused (None: send now), or how the call ends
        here: pending (the run was cancelled), or failed once the outage has lasted longer
        than the judge's retry budget."""
        if state.cancelled:
            return call.left_pending()
        turn, breaker = await self.breakers.wait_turn(
            call.endpoint,
            holder=call.holder,
            lease_seconds=job.request.timeout_seconds + breakers.PROBE_MARGIN_SECONDS,
            budget_seconds=call.budget_seconds,
            began_at=call.began_at,
            cancelled=lambda: state.cancelled,
        )
        if turn is None:
            return call.left_pending()
        if turn is breakers.Turn.GIVE_UP:
            tz = timezone.get_current_timezone()
            call.gave_up(breakers.unreachable_reason(breaker, now=time.time(), tz=tz), breaker)
            return call.ended()
        return None


_engine_instance: Engine | None = None
_engine_lock = threading.Lock()


def get_engine(limiter: limits.RedisLimiter) -> Engine:
    global _engine_instance
    with _engine_lock:
        engine = _engine_instance
        if engine is None or engine.pid != os.getpid() or engine.limiter is not limiter:
            if engine is not None and engine.pid == os.getpid():
                engine.stop()  # its limiter was replaced (settings changed)
            engine = _engine_instance = Engine(limiter)
        return engine


def stop_engine() -> None:
    """Stop this process's engine, if any (tests, and anyone swapping the limiter)."""
    global _engine_instance
    with _engine_lock:
        engine, _engine_instance = _engine_instance, None
    if engine is not None and engine.pid == os.getpid():
        engine.stop()
