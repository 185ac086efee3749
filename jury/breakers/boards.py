"""The breakers of every endpoint as the workers share them: each change is read, computed by
the pure rules (rules.py) and written back only if nobody changed the state meanwhile (a
compare-and-set on the store), so the rules live in one place whatever the store.

`Board` is synchronous (the per-call path, the pages); `AsyncBoard` runs on the chunk
engine's event loop and keeps what it read for a second, so a healthy endpoint costs no
Redis round trip per request."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from jury.breakers import rules
from jury.breakers.rules import Admission, BreakerSettings, BreakerState, Signal, Turn

T = TypeVar("T")
# A waiting call asks again at least this often (a probe's success ends its wait).
POLL_SECONDS = 1.0
# What AsyncBoard reads stays good this long.
CACHE_SECONDS = 1.0
# Compare-and-set conflicts one change gives up after (a bug, not contention).
MAX_CONFLICTS = 100

Change = Callable[[BreakerState, float], tuple[T, BreakerState]]


class Store(Protocol):
    def load(self, endpoint: str) -> tuple[Any, BreakerState]:
        """The endpoint's state and a token `save` compares."""

    def save(self, endpoint: str, token: Any, state: BreakerState) -> bool:
        """Write `state` unless the state changed since `load` gave `token`."""

    def load_many(self, endpoints: list[str]) -> dict[str, BreakerState]: ...


class AsyncStore(Protocol):
    async def load(self, endpoint: str) -> tuple[Any, BreakerState]: ...

    async def save(self, endpoint: str, token: Any, state: BreakerState) -> bool: ...


def _admit(
    holder: str, lease: float, budget: float, began_at: float, settings: BreakerSettings
) -> Change:
    def change(state: BreakerState, now: float) -> tuple[Admission, BreakerState]:
        return rules.admit(
            state,
            now=now,
            holder=holder,
            lease_seconds=lease,
            budget_seconds=budget,
            began_at=began_at,
            settings=settings,
        )

    return change


def _record(holder: str, signal: Signal, error: str, settings: BreakerSettings) -> Change:
    def change(state: BreakerState, now: float) -> tuple[None, BreakerState]:
        after = rules.record(
            state, now=now, holder=holder, signal=signal, error=error[:500], settings=settings
        )
        return None, after

    return change


def _release(holder: str) -> Change:
    def change(state: BreakerState, now: float) -> tuple[None, BreakerState]:
        return None, rules.release(state, holder=holder)

    return change


class Board:
    """The synchronous side: every question reads the store; only changes write."""

    def __init__(
        self,
        store: Store,
        *,
        settings: BreakerSettings,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock

    def change(self, endpoint: str, change: Change) -> tuple[T, BreakerState]:
        for _ in range(MAX_CONFLICTS):
            token, state = self.store.load(endpoint)
            result, after = change(state, self.clock())
            if after == state or self.store.save(endpoint, token, after):
                return result, after
        raise RuntimeError(f"the breaker of {endpoint} kept changing under this worker")

    def wait_turn(
        self,
        endpoint: str,
        *,
        holder: str,
        lease_seconds: float,
        budget_seconds: float,
        began_at: float,
        sleep: Callable[[float], None],
        cancelled: Callable[[], bool],
    ) -> tuple[Turn | None, BreakerState]:
        """Wait while the endpoint is paused: SEND or PROBE, GIVE_UP (the outage outlasted
        the budget), or None when `cancelled()` (checked while waiting)."""
        ask = _admit(holder, lease_seconds, budget_seconds, began_at, self.settings)
        while True:
            admission, state = self.change(endpoint, ask)
            if admission.turn is not Turn.WAIT:
                return admission.turn, state
            if cancelled():
                return None, state
            sleep(min(admission.wait_seconds, POLL_SECONDS))

    def record(self, endpoint: str, *, holder: str, signal: Signal, error: str) -> BreakerState:
        return self.change(endpoint, _record(holder, signal, error, self.settings))[1]

    def release(self, endpoint: str, *, holder: str) -> None:
        self.change(endpoint, _release(holder))

    def outages(self, endpoints: list[str]) -> dict[str, BreakerState]:
        """The endpoints unreachable now (open, not stale), with their state."""
        now = self.clock()
        return {
            endpoint: state
            for endpoint, state in self.store.load_many(endpoints).items()
            if rules.is_outage(state, now=now, settings=self.settings)
        }


class AsyncBoard:
    """The event loop's side: a healthy endpoint is answered from what was read last."""

    def __init__(
        self,
        store: AsyncStore,
        *,
        settings: BreakerSettings,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self.seen: dict[str, tuple[float, BreakerState]] = {}

    def _fresh(self, endpoint: str) -> BreakerState | None:
        seen = self.seen.get(endpoint)
        if seen is None or time.monotonic() - seen[0] > CACHE_SECONDS:
            return None
        return seen[1]

    async def change(self, endpoint: str, change: Change) -> tuple[T, BreakerState]:
        for _ in range(MAX_CONFLICTS):
            token, state = await self.store.load(endpoint)
            result, after = change(state, self.clock())
            if after == state or await self.store.save(endpoint, token, after):
                self.seen[endpoint] = (time.monotonic(), after)
                return result, after
        raise RuntimeError(f"the breaker of {endpoint} kept changing under this worker")

    async def wait_turn(
        self,
        endpoint: str,
        *,
        holder: str,
        lease_seconds: float,
        budget_seconds: float,
        began_at: float,
        cancelled: Callable[[], bool],
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> tuple[Turn | None, BreakerState]:
        """As Board.wait_turn; a state read less than a second ago answers without Redis
        unless this call may take the probe or close a stale breaker."""
        ask = _admit(holder, lease_seconds, budget_seconds, began_at, self.settings)
        while True:
            seen = self._fresh(endpoint)
            admission = None
            if seen is not None:
                admission, after = ask(seen, self.clock())
                if admission.turn is Turn.PROBE or after != seen:
                    admission = None  # a change: through the store
            if admission is None:
                admission, seen = await self.change(endpoint, ask)
            if admission.turn is not Turn.WAIT:
                return admission.turn, seen
            if cancelled():
                return None, seen
            await sleep(min(admission.wait_seconds, POLL_SECONDS))

    async def record(
        self, endpoint: str, *, holder: str, signal: Signal, error: str
    ) -> BreakerState:
        if signal is Signal.UP and self._fresh(endpoint) == rules.CLOSED:
            return rules.CLOSED
        return (await self.change(endpoint, _record(holder, signal, error, self.settings)))[1]

    async def release(self, endpoint: str, *, holder: str) -> None:
        await self.change(endpoint, _release(holder))
