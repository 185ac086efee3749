"""When a provider is down: the circuit breaker of one endpoint (a base URL), as pure rules.

Down signals in a row (connection refused or reset, HTTP 502/503) open the breaker: calls to
the endpoint stop sending and wait, one probe request at a time tests whether the provider
is back, and any answer closes the breaker again. A failure while the breaker is open spends
none of the call's attempts; a waiting call ends, with the reason, once the provider has been
unreachable for longer than its judge's retry budget. The state is shared by every worker
(jury.breakers stores it in Redis or the database); every function here takes the time as an
argument (epoch seconds), so tests need no clock and no sleep.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from datetime import datetime, tzinfo
from enum import Enum
from typing import Any

from jury.providers import base as providers

# HTTP statuses that say the server behind the endpoint is not there (a gateway's view).
DOWN_STATUSES = frozenset({502, 503})


class Signal(Enum):
    UP = "up"  # the server answered (any status but a down one)
    DOWN = "down"  # not reachable
    UNKNOWN = "unknown"  # a timeout or a client's bug: says nothing either way


def signal_of(exc: BaseException | None) -> Signal:
    """What a request's end says about its endpoint (`exc` None: it was answered)."""
    if exc is None:
        return Signal.UP
    if isinstance(exc, providers.ConnectionFailed):
        return Signal.DOWN
    if isinstance(exc, providers.ProviderTimeout) or not isinstance(exc, providers.ProviderError):
        return Signal.UNKNOWN
    if exc.status_code in DOWN_STATUSES:
        return Signal.DOWN
    return Signal.UP if exc.status_code is not None else Signal.UNKNOWN


@dataclass(frozen=True)
class BreakerSettings:
    threshold: int = 3  # down signals in a row that open the breaker
    probe_seconds: float = 5.0  # between two probes while open
    forget_after_seconds: float = 120.0  # an open breaker nobody probed for this long is stale


@dataclass(frozen=True)
class BreakerState:
    failures: int = 0  # down signals in a row
    opened_at: float | None = None  # None: closed
    next_probe_at: float = 0.0  # open: no probe before this
    probe_holder: str = ""  # open: the call whose request is the probe
    probe_until: float = 0.0  # the holder's turn lapses then (a worker that died)
    last_down_at: float = 0.0
    last_error: str = ""

    @property
    def is_open(self) -> bool:
        return self.opened_at is not None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> BreakerState:
        known = {k: v for k, v in (data or {}).items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes | None) -> BreakerState:
        return cls.from_dict(json.loads(text)) if text else cls()


CLOSED = BreakerState()


def is_stale(state: BreakerState, *, now: float, settings: BreakerSettings) -> bool:
    """Open, but nobody has probed for a while: the provider may be back; the next call finds
    out (the page no longer reports the outage)."""
    if not state.is_open or (state.probe_holder and now < state.probe_until):
        return False
    return now - state.last_down_at > settings.forget_after_seconds


def is_outage(state: BreakerState, *, now: float, settings: BreakerSettings) -> bool:
    """Whether the endpoint is unreachable now, as far as the calls know."""
    return state.is_open and not is_stale(state, now=now, settings=settings)


class Turn(Enum):
    SEND = "send"  # closed: send as usual
    PROBE = "probe"  # open: this call's request is the probe
    WAIT = "wait"  # open: ask again after `wait_seconds`
    GIVE_UP = "give_up"  # open for longer than the call's budget, and its last probe failed


@dataclass(frozen=True)
class Admission:
    turn: Turn
    wait_seconds: float = 0.0


def admit(
    state: BreakerState,
    *,
    now: float,
    holder: str,
    lease_seconds: float,
    budget_seconds: float,
    began_at: float,
    settings: BreakerSettings,
) -> tuple[Admission, BreakerState]:
    """May the call `holder` send now? The new state (a probe taken, a stale breaker closed).
    A call gives up only right after a failed probe, never on a breaker nobody tests, and
    only once it has itself waited its budget: the outage is counted from when it opened or
    from `began_at` (when the call began, wall clock), whichever is later, so a call resumed
    after a long outage gets its whole budget instead of ending on an old breaker."""
    if not state.is_open:
        return Admission(Turn.SEND), state
    if is_stale(state, now=now, settings=settings):
        return Admission(Turn.SEND), CLOSED
    probe_free = not state.probe_holder or now >= state.probe_until or state.probe_holder == holder
    if probe_free and now >= state.next_probe_at:
        return Admission(Turn.PROBE), replace(
            state, probe_holder=holder, probe_until=now + lease_seconds
        )
    assert state.opened_at is not None
    if probe_free and now - max(state.opened_at, began_at) >= budget_seconds:
        return Admission(Turn.GIVE_UP), state
    until = state.next_probe_at if probe_free else min(state.probe_until, now + 1.0)
    return Admission(Turn.WAIT, wait_seconds=max(until - now, 0.05)), state


def record(
    state: BreakerState,
    *,
    now: float,
    holder: str,
    signal: Signal,
    error: str,
    settings: BreakerSettings,
) -> BreakerState:
    """The state after `holder`'s request ended with `signal`."""
    if signal is Signal.UP:
        return CLOSED
    probe_done = (
        {"probe_holder": "", "probe_until": 0.0, "next_probe_at": now + settings.probe_seconds}
        if state.is_open and state.probe_holder == holder
        else {}
    )
    if signal is Signal.UNKNOWN:
        return replace(state, **probe_done)
    if state.is_open:
        return replace(
            state, failures=state.failures + 1, last_down_at=now, last_error=error, **probe_done
        )
    in_a_row = state.failures if now - state.last_down_at <= settings.forget_after_seconds else 0
    failures = in_a_row + 1
    if failures < settings.threshold:
        return replace(state, failures=failures, last_down_at=now, last_error=error)
    return BreakerState(
        failures=failures,
        opened_at=now,
        next_probe_at=now + settings.probe_seconds,
        last_down_at=now,
        last_error=error,
    )


def release(state: BreakerState, *, holder: str) -> BreakerState:
    """A call that took the probe but sent nothing (cancelled, no slot): the next may probe."""
    if state.probe_holder != holder:
        return state
    return replace(state, probe_holder="", probe_until=0.0)


def spends_attempt(signal: Signal, after: BreakerState) -> bool:
    """Whether a failed request counts against the call's attempts: not when its provider is
    down (the breaker is open after it), which is the outage's doing, not the call's."""
    return not (signal is Signal.DOWN and after.is_open)


def unreachable_reason(state: BreakerState, *, now: float, tz: tzinfo) -> str:
    """'provider unreachable since 14:03:12 (16 minutes)', in the site's time zone."""
    assert state.opened_at is not None
    since = datetime.fromtimestamp(state.opened_at, tz)
    return f"provider unreachable since {since:%H:%M:%S} ({duration_text(now - state.opened_at)})"


def duration_text(seconds: float) -> str:
    if seconds < 120:
        return f"{max(int(seconds), 0)} s"
    return f"{int(seconds // 60)} minutes"
