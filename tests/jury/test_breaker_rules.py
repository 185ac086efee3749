"""The circuit breaker of an endpoint (jury.breakers.rules): pure rules, the time passed in."""

from __future__ import annotations

from datetime import UTC

import pytest

from jury.breakers.rules import (
    CLOSED,
    BreakerSettings,
    BreakerState,
    Signal,
    Turn,
    admit,
    is_outage,
    record,
    release,
    signal_of,
    spends_attempt,
    unreachable_reason,
)
from jury.providers import base as providers

SETTINGS = BreakerSettings(threshold=3, probe_seconds=5.0, forget_after_seconds=120.0)
T0 = 1_000_000.0


def down(state: BreakerState, now: float, holder: str = "a") -> BreakerState:
    return record(
        state, now=now, holder=holder, signal=Signal.DOWN, error="refused", settings=SETTINGS
    )


def ask(state: BreakerState, now: float, holder: str, budget: float = 900.0, began_at: float = T0):
    return admit(
        state,
        now=now,
        holder=holder,
        lease_seconds=60.0,
        budget_seconds=budget,
        began_at=began_at,
        settings=SETTINGS,
    )


def opened(at: float = T0) -> BreakerState:
    state = CLOSED
    for i in range(3):
        state = down(state, at + i * 0.1)
    return state


@pytest.mark.parametrize(
    "exc,signal",
    [
        (None, Signal.UP),
        (providers.ConnectionFailed("refused"), Signal.DOWN),
        (providers.ServerError("bad gateway", status_code=502), Signal.DOWN),
        (providers.ServerError("unavailable", status_code=503), Signal.DOWN),
        (providers.ServerError("internal", status_code=500), Signal.UP),
        (providers.RateLimited("slow down", status_code=429), Signal.UP),
        (providers.BadRequest("bad", status_code=400), Signal.UP),
        (providers.ProviderTimeout("no answer"), Signal.UNKNOWN),
        (RuntimeError("a client's bug"), Signal.UNKNOWN),
    ],
)
def test_what_a_request_says_about_its_endpoint(exc, signal):
    assert signal_of(exc) is signal


def test_down_signals_in_a_row_open_the_breaker_and_an_answer_between_them_resets_the_count():
    state = down(down(CLOSED, T0), T0 + 1)
    assert not state.is_open
    assert not down(
        record(state, now=T0 + 2, holder="a", signal=Signal.UP, error="", settings=SETTINGS), T0 + 3
    ).is_open
    state = down(state, T0 + 2)
    assert state.is_open and state.opened_at == T0 + 2 and state.last_error == "refused"


def test_old_down_signals_do_not_count_towards_a_new_outage():
    state = down(down(CLOSED, T0), T0 + 1)
    assert not down(state, T0 + 500).is_open


def test_while_open_one_call_probes_at_a_time_and_the_others_wait_without_sending():
    state = opened()
    admission, state = ask(state, T0 + 1, "a")
    assert admission.turn is Turn.WAIT and 0 < admission.wait_seconds <= 5
    admission, state = ask(state, T0 + 6, "a")
    assert admission.turn is Turn.PROBE and state.probe_holder == "a"
    admission, _ = ask(state, T0 + 6.5, "b")
    assert admission.turn is Turn.WAIT
    # the probe fails: no probe before the next interval, then one again
    state = down(state, T0 + 7, holder="a")
    assert state.is_open and not state.probe_holder
    assert ask(state, T0 + 8, "b")[0].turn is Turn.WAIT
    assert ask(state, T0 + 12.5, "b")[0].turn is Turn.PROBE


def test_a_probe_that_succeeds_closes_the_breaker_for_everyone():
    _, state = ask(opened(), T0 + 6, "a")
    state = record(state, now=T0 + 7, holder="a", signal=Signal.UP, error="", settings=SETTINGS)
    assert state == CLOSED
    assert ask(state, T0 + 7, "b")[0].turn is Turn.SEND


def test_the_probe_of_a_worker_that_died_lapses():
    _, state = ask(opened(), T0 + 6, "a")  # lease 60 s
    assert ask(state, T0 + 30, "b")[0].turn is Turn.WAIT
    assert ask(state, T0 + 67, "b")[0].turn is Turn.PROBE


def test_a_prober_that_sent_nothing_lets_the_next_call_probe_at_once():
    _, state = ask(opened(), T0 + 6, "a")
    state = release(state, holder="a")
    assert ask(state, T0 + 6.1, "b")[0].turn is Turn.PROBE


def test_a_timed_out_probe_frees_the_probe_without_closing_or_counting():
    _, state = ask(opened(), T0 + 6, "a")
    after = record(
        state, now=T0 + 8, holder="a", signal=Signal.UNKNOWN, error="", settings=SETTINGS
    )
    assert after.is_open and after.failures == state.failures and not after.probe_holder
    assert after.next_probe_at == T0 + 13


def test_waiting_calls_give_up_after_their_budget_but_only_right_after_a_failed_probe():
    state = opened()
    budget = 60.0
    # past the budget while a probe is in flight: wait for its answer
    _, probing = ask(state, T0 + 61, "a", budget)
    assert ask(probing, T0 + 62, "b", budget)[0].turn is Turn.WAIT
    failed = down(probing, T0 + 63, holder="a")
    assert ask(failed, T0 + 64, "b", budget)[0].turn is Turn.GIVE_UP
    # within the budget: wait
    assert ask(down(ask(state, T0 + 6, "a")[1], T0 + 7), T0 + 8, "b", budget)[0].turn is Turn.WAIT


def test_a_call_that_began_after_the_outage_opened_waits_its_own_whole_budget():
    """A call resumed long after the breaker opened (the outage outlasted the first calls'
    budgets) is not ended by the old breaker: it waits its budget from its own start."""
    budget = 60.0
    failed = down(ask(opened(), T0 + 100, "a", budget)[1], T0 + 101, holder="a")
    resumed_at = T0 + 101.5
    waiting = ask(failed, T0 + 102, "b", budget, began_at=resumed_at)[0]
    assert waiting.turn is Turn.WAIT
    # its own budget spent, right after a failed probe: it gives up
    again = down(ask(failed, T0 + 160, "a", budget)[1], T0 + 161, holder="a")
    assert ask(again, T0 + 162, "b", budget, began_at=resumed_at)[0].turn is Turn.GIVE_UP
    # a call that began before the outage gives up on the same breaker at once
    assert ask(failed, T0 + 102, "c", budget, began_at=T0 - 10)[0].turn is Turn.GIVE_UP


def test_an_open_breaker_nobody_probed_for_long_is_forgotten():
    state = opened()
    assert is_outage(state, now=T0 + 100, settings=SETTINGS)
    assert not is_outage(state, now=T0 + 200, settings=SETTINGS)
    admission, after = ask(state, T0 + 200, "a", budget=10)
    assert admission.turn is Turn.SEND and after == CLOSED


def test_failures_while_the_provider_is_down_spend_no_attempts():
    closed_after = down(CLOSED, T0)
    assert spends_attempt(Signal.DOWN, closed_after)
    assert not spends_attempt(Signal.DOWN, opened())
    assert spends_attempt(Signal.UNKNOWN, opened())  # a timeout is the call's own
    assert spends_attempt(Signal.UP, CLOSED)  # a 500, a 429


def test_the_reason_names_when_the_outage_began_and_how_long_it_lasts():
    state = opened(at=1_700_000_000.0)  # 22:13:20 UTC
    assert unreachable_reason(state, now=1_700_000_000.0 + 16 * 60 + 5, tz=UTC) == (
        "provider unreachable since 22:13:20 (16 minutes)"
    )
    assert unreachable_reason(state, now=1_700_000_045.5, tz=UTC).endswith("(45 s)")


def test_the_state_survives_its_json_form():
    state = ask(opened(), T0 + 6, "a")[1]
    assert BreakerState.from_json(state.to_json()) == state
    assert BreakerState.from_json("") == CLOSED
