"""delphi.consensus stopping rule: when a study ends, and how the rule is validated."""

import re

import pytest

from delphi.consensus import Outcome, RoundOutcomes, evaluate_stopping_rule, validate_stopping_rule
from delphi.errors import DelphiError

IN, OUT, NONE, FEW = (
    Outcome.CONSENSUS_IN,
    Outcome.CONSENSUS_OUT,
    Outcome.NO_CONSENSUS,
    Outcome.TOO_FEW_RATINGS,
)


def round_(number, outcomes, pct_unchanged=None):
    return RoundOutcomes(number=number, outcomes=outcomes, pct_unchanged=pct_unchanged or {})


def test_stop_at_max_rounds():
    rule = {"max_rounds": 3}
    rounds = [round_(1, {"a": NONE}), round_(2, {"a": NONE})]
    assert evaluate_stopping_rule(rule, rounds).stop is False
    decision = evaluate_stopping_rule(rule, [*rounds, round_(3, {"a": NONE})])
    assert decision.stop is True
    assert decision.criteria_met == ("max_rounds",)
    assert decision.reasons == ("round 3 reached the maximum of 3 rounds",)


def test_stop_when_all_resolved():
    rule = {"all_resolved": True}
    done = evaluate_stopping_rule(rule, [round_(1, {"a": IN, "b": OUT})])
    assert (done.stop, done.criteria_met) == (True, ("all_resolved",))
    # too few ratings is not resolved
    pending = evaluate_stopping_rule(rule, [round_(1, {"a": IN, "b": FEW})])
    assert pending.stop is False
    assert pending.reasons == ("1 of 2 items of round 1 without consensus",)


def test_all_resolved_looks_at_the_latest_round_only():
    # carry-over "drop resolved": a reached consensus in round 1 and is not in round 2
    rounds = [round_(1, {"a": IN, "b": NONE}), round_(2, {"b": "consensus_out"})]
    assert evaluate_stopping_rule({"all_resolved": True}, rounds).stop is True


def test_stop_on_stability():
    rule = {"stability": {"pct_unchanged_at_least": 80}}
    stable = round_(2, {"a": NONE, "b": NONE, "c": IN}, {"a": 85.0, "b": 80.0, "c": 10.0})
    decision = evaluate_stopping_rule(rule, [round_(1, {}), stable])
    # a and b are unresolved and >= 80% unchanged; c is resolved, its change does not matter
    assert (decision.stop, decision.criteria_met) == (True, ("stability",))
    moving = round_(2, {"a": NONE, "b": NONE}, {"a": 85.0, "b": 79.9})
    assert evaluate_stopping_rule(rule, [moving]).stop is False
    # an unresolved item without a comparison (new or reworded) is not shown to be stable
    new_item = round_(2, {"a": NONE, "b": NONE}, {"a": 90.0})
    assert evaluate_stopping_rule(rule, [new_item]).stop is False
    first = evaluate_stopping_rule(rule, [round_(1, {"a": NONE}, {"a": 100.0})])
    assert first.stop is False
    assert first.reasons == ("stability needs two rounds to compare",)


def test_criteria_are_alternatives():
    rule = {"max_rounds": 3, "all_resolved": True}
    decision = evaluate_stopping_rule(rule, [round_(1, {"a": NONE}), round_(2, {"a": IN})])
    assert decision.stop is True
    assert decision.criteria_met == ("all_resolved",)
    assert decision.reasons[0] == "round 2 of at most 3"
    both = evaluate_stopping_rule(rule, [round_(3, {"a": IN})])
    assert both.criteria_met == ("max_rounds", "all_resolved")


def test_no_round_yet():
    decision = evaluate_stopping_rule({"max_rounds": 2}, [])
    assert (decision.stop, decision.reasons) == (False, ("no round analysed yet",))


def test_rounds_must_be_in_order():
    with pytest.raises(ValueError, match="increasing order"):
        evaluate_stopping_rule({"max_rounds": 2}, [round_(2, {}), round_(1, {})])


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({}, "sets no criterion"),
        ({"all_resolved": False}, "sets no criterion"),
        ({"max_rounds": 0}, "max_rounds: must be an integer >= 1"),
        ({"max_rounds": 2.5}, "max_rounds: must be an integer >= 1"),
        ({"all_resolved": "yes"}, "all_resolved: must be true or false"),
        ({"rounds": 3}, "unknown key 'rounds'"),
        ({"stability": {"pct": 80}}, "stability: must be"),
        ({"stability": {"pct_unchanged_at_least": 0}}, "stability.pct_unchanged_at_least"),
        ([], "must be a JSON object"),
    ],
)
def test_stopping_rule_validation(rule, message):
    with pytest.raises(DelphiError, match=re.escape(message)) as error:
        validate_stopping_rule(rule)
    assert error.value.field == "stopping_rule"


def test_stopping_rule_normalised():
    assert validate_stopping_rule(
        {"max_rounds": 3, "all_resolved": False, "stability": {"pct_unchanged_at_least": 80}}
    ) == {"max_rounds": 3, "stability": {"pct_unchanged_at_least": 80}}
