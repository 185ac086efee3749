"""delphi.consensus rules: presets on constructed ratings, composition, JSON.

The statistics come from delphi.stats (type 7 quantiles); the numbers each rule reads are
worked out in the comments.
"""

import json
import re

import pytest

from delphi.consensus import (
    CombinedRule,
    Comet7015,
    MedianIqr,
    Outcome,
    PercentAgreement,
    RandUcla,
    RuleError,
    combine_outcomes,
    evaluate_consensus,
    rule_from_dict,
    rule_to_dict,
    validate_rule,
)
from delphi.stats import item_statistics

IN, OUT, NONE, FEW = (
    Outcome.CONSENSUS_IN,
    Outcome.CONSENSUS_OUT,
    Outcome.NO_CONSENSUS,
    Outcome.TOO_FEW_RATINGS,
)


def stats_of(*ratings):
    return item_statistics(list(ratings), n_invited=len(ratings))


# --------------------------------------------------------------------------- presets


@pytest.mark.parametrize(
    ("ratings", "expected"),
    [
        # 7 of 10 rate 7-9 (70% >= 70) and 1 rates 1-3 (10% < 15)
        ((7, 7, 8, 8, 8, 9, 9, 2, 5, 5), IN),
        # mirrored: 7 of 10 rate 1-3, 1 rates 7-9
        ((1, 1, 2, 2, 3, 3, 3, 9, 5, 5), OUT),
        # 6 of 10 rate 7-9: 60% < 70
        ((7, 7, 7, 7, 7, 7, 5, 5, 5, 5), NONE),
        # 14 of 20 rate 7-9 (70%) but 3 of 20 rate 1-3 = 15%, not < 15
        ((*[8] * 14, 1, 2, 3, 5, 5, 5), NONE),
    ],
)
def test_comet_70_15(ratings, expected):
    assert Comet7015().evaluate(stats_of(*ratings)) == expected


def test_comet_too_few_ratings_counts_ratings_not_answers():
    # 6 answers, but one is "unable to rate": 5 ratings < min_n 6
    stats = item_statistics([7, 7, 7, 7, 7, None], n_invited=6)
    assert Comet7015(min_n=6).evaluate(stats) == FEW
    assert Comet7015(min_n=5).evaluate(stats) == IN
    # no rating at all is too few whatever min_n says
    assert Comet7015().evaluate(item_statistics([None], n_invited=1)) == FEW


@pytest.mark.parametrize(
    ("ratings", "expected"),
    [
        ((7, 8, 9, 5), IN),  # 3 / 4 = 75% rate 7-9
        ((1, 2, 3, 5), OUT),  # 3 / 4 = 75% rate 1-3
        ((7, 8, 1, 2), NONE),  # 50% and 50%
        ((7, 8, 9, 5, 5), NONE),  # 3 / 5 = 60%
    ],
)
def test_percent_agreement_75(ratings, expected):
    assert PercentAgreement().evaluate(stats_of(*ratings)) == expected


def test_percent_agreement_too_few():
    assert PercentAgreement(min_n=5).evaluate(stats_of(7, 8, 9, 9)) == FEW


@pytest.mark.parametrize(
    ("ratings", "expected"),
    [
        # 7 7 7 8: median 7; Q1 h = 0.75 -> 7; Q3 h = 2.25 -> 7 + 0.25 = 7.25; IQR 0.25
        ((7, 7, 7, 8), IN),
        # 7 7 8 8 8: median 8; Q1 h = 1 -> 7; Q3 h = 3 -> 8; IQR exactly 1 (<= 1)
        ((7, 7, 8, 8, 8), IN),
        # 2 3 3 3: median 3; Q1 h = 0.75 -> 2 + 0.75 = 2.75; Q3 = 3; IQR 0.25
        ((2, 3, 3, 3), OUT),
        # 5 7 8 9: median 7.5; Q1 = 5 + 0.75 * 2 = 6.5; Q3 = 8 + 0.25 = 8.25; IQR 1.75 > 1
        ((5, 7, 8, 9), NONE),
        # 5 5 5 5: median 5, IQR 0: tight but neither >= 7 nor <= 3
        ((5, 5, 5, 5), NONE),
    ],
)
def test_median_iqr(ratings, expected):
    assert MedianIqr().evaluate(stats_of(*ratings)) == expected


def test_median_iqr_too_few():
    assert MedianIqr(min_n=3).evaluate(stats_of(7, 7)) == FEW


@pytest.mark.parametrize(
    ("ratings", "expected"),
    [
        # 7 7 8 8 9: median 8; P30 h = 1.2 -> 7.2; P70 h = 2.8 -> 8.8; IPR 1.6;
        # AI = |5 - 8| = 3; IPRAS = 2.35 + 4.5 = 6.85; no disagreement -> appropriate
        ((7, 7, 8, 8, 9), IN),
        # 1 2 2 3 3: median 2; P30 = 2; P70 = 2 + 0.8 = 2.8; IPR 0.8; AI = |5 - 2.4| = 2.6;
        # IPRAS 6.25; no disagreement -> inappropriate
        ((1, 2, 2, 3, 3), OUT),
        # median 5 -> uncertain
        ((4, 5, 5, 6, 6), NONE),
        # 1 1 1 1 7 7 8 9 9 9: median (7 + 7) / 2 = 7, but P30 h = 2.7 -> 1, P70 h = 6.3 ->
        # 8.3; IPR 7.3; AI = |5 - 4.65| = 0.35; IPRAS = 2.875 < 7.3 -> disagreement -> uncertain
        ((1, 1, 1, 1, 7, 7, 8, 9, 9, 9), NONE),
        # median 6.5 falls between the bands -> uncertain
        ((6, 7), NONE),
    ],
)
def test_rand_ucla(ratings, expected):
    assert RandUcla().evaluate(stats_of(*ratings)) == expected


def test_rand_ucla_reads_the_disagreement_flag():
    stats = stats_of(1, 1, 1, 1, 7, 7, 8, 9, 9, 9)
    assert stats.median == 7 and stats.disagreement is True
    assert RandUcla(min_n=11).evaluate(stats) == FEW


# --------------------------------------------------------------------------- composition

BRIEF_EXAMPLE = {
    "op": "and",
    "min_n": 6,
    "rules": [
        {"preset": "comet_70_15"},
        {"preset": "median_iqr", "median_at_least": 7, "iqr_at_most": 1},
    ],
}


@pytest.mark.parametrize(
    ("op", "outcomes", "expected"),
    [
        ("and", [IN, IN], IN),
        ("and", [OUT, OUT], OUT),
        ("and", [IN, NONE], NONE),
        ("and", [IN, OUT], NONE),
        ("and", [IN, FEW], FEW),
        ("or", [IN, NONE], IN),
        ("or", [NONE, OUT], OUT),
        ("or", [NONE, NONE], NONE),
        ("or", [IN, OUT], NONE),  # conflict
        ("or", [IN, IN, OUT], NONE),  # conflict, whatever the majority
        ("or", [IN, FEW], FEW),
        ("or", ["consensus_in"], IN),
    ],
)
def test_combine_outcomes(op, outcomes, expected):
    assert combine_outcomes(op, outcomes) == expected


def test_combine_outcomes_rejects_unknown_op():
    with pytest.raises(ValueError, match='op must be "and" or "or"'):
        combine_outcomes("xor", [IN])


def test_and_rule_from_the_brief():
    rule = rule_from_dict(BRIEF_EXAMPLE)
    # 7 7 7 8 8 8 9: 100% rate 7-9 -> COMET in; median 8; Q1 h = 1.5 -> 7; Q3 h = 4.5 -> 8;
    # IQR 1 -> median/IQR in; both in -> in
    assert evaluate_consensus(rule, stats_of(7, 7, 7, 8, 8, 8, 9)) == IN
    # 7 7 7 7 9 9 9: COMET in; median 7 but Q1 = 7, Q3 h = 4.5 -> 9; IQR 2 -> not in
    assert evaluate_consensus(rule, stats_of(7, 7, 7, 7, 9, 9, 9)) == NONE
    # 1 1 2 2 3 3 3: COMET out (100% 1-3); median 2, Q1 1.5, Q3 3, IQR 1.5 -> not out
    assert evaluate_consensus(rule, stats_of(1, 1, 2, 2, 3, 3, 3)) == NONE
    # 1 1 2 2 2 3 3: median 2, Q1 h = 1.5 -> 1.5, Q3 h = 4.5 -> 2.5, IQR 1 -> both out
    assert evaluate_consensus(rule, stats_of(1, 1, 2, 2, 2, 3, 3)) == OUT
    # 5 ratings < min_n 6
    assert evaluate_consensus(rule, stats_of(7, 7, 8, 8, 9)) == FEW


def test_or_rule():
    rule = CombinedRule(op="or", rules=(Comet7015(), MedianIqr()))
    # the second case above: COMET in, median/IQR no consensus -> in
    assert rule.evaluate(stats_of(7, 7, 7, 7, 9, 9, 9)) == IN
    # 1 5 7 7 7 9: 4 / 6 = 66.7% rate 7-9 (< 70); median 7, Q1 h = 1.25 -> 5.5,
    # Q3 h = 3.75 -> 8.5, IQR 3 (> 1): neither
    assert rule.evaluate(stats_of(7, 7, 7, 1, 5, 9)) == NONE


def test_or_conflict_between_children_is_no_consensus():
    # Legal but odd thresholds so that one child says in and the other out on 7 x 10:
    # 100% rate 7-9 -> percent agreement (>= 60%) in; median 7 <= 7 with IQR 0 -> out.
    odd_median = MedianIqr(median_at_least=9, iqr_at_most=1, out_median_at_most=7)
    stats = stats_of(*[7] * 10)
    assert PercentAgreement(pct_at_least=60).evaluate(stats) == IN
    assert odd_median.evaluate(stats) == OUT
    for op in ("or", "and"):
        rule = CombinedRule(op=op, rules=(PercentAgreement(pct_at_least=60), odd_median))
        assert rule.evaluate(stats) == NONE


def test_too_few_in_a_child_makes_the_combination_too_few():
    rule = CombinedRule(op="or", rules=(Comet7015(min_n=10), PercentAgreement()))
    assert rule.evaluate(stats_of(7, 7, 7, 7, 7, 7, 7)) == FEW


def test_nested_rules():
    rule = rule_from_dict(
        {
            "op": "or",
            "rules": [
                {"preset": "rand_ucla"},
                {
                    "op": "and",
                    "rules": [{"preset": "percent_agreement"}, {"preset": "comet_70_15"}],
                },
            ],
        }
    )
    # 7 7 8 8 9: RAND/UCLA in (see above); percent agreement and COMET in -> in
    assert rule.evaluate(stats_of(7, 7, 8, 8, 9)) == IN


# --------------------------------------------------------------------------- JSON


def test_json_round_trip_writes_every_default_out():
    rule = rule_from_dict(BRIEF_EXAMPLE)
    data = rule_to_dict(rule)
    assert data == {
        "op": "and",
        "min_n": 6,
        "rules": [
            {"preset": "comet_70_15", "min_n": 1, "agree_pct_at_least": 70, "oppose_pct_below": 15},
            {
                "preset": "median_iqr",
                "min_n": 1,
                "median_at_least": 7,
                "iqr_at_most": 1,
                "out_median_at_most": 3,
            },
        ],
    }
    assert rule_from_dict(json.loads(json.dumps(data))) == rule
    assert validate_rule(BRIEF_EXAMPLE) == data
    assert validate_rule(data) == data


def test_json_round_trip_of_each_preset_with_custom_thresholds():
    for rule in (
        Comet7015(agree_pct_at_least=80, oppose_pct_below=10, min_n=8),
        PercentAgreement(pct_at_least=66.7),
        MedianIqr(median_at_least=8, iqr_at_most=2, out_median_at_most=2),
        RandUcla(min_n=9),
    ):
        assert rule_from_dict(json.loads(json.dumps(rule_to_dict(rule)))) == rule


def test_describe_states_the_thresholds():
    text = rule_from_dict(BRIEF_EXAMPLE).describe()
    assert ">= 70% rate 7-9 and < 15% rate 1-3" in text
    assert "median >= 7 and IQR <= 1" in text
    assert "at least 6 ratings" in text


@pytest.mark.parametrize(
    ("data", "where", "what"),
    [
        (
            {
                "op": "and",
                "rules": [{"preset": "rand_ucla"}, {"preset": "median_iqr", "iqr_at_most": -1}],
            },
            "rule.rules[1].iqr_at_most",
            "-1",
        ),
        (
            {
                "op": "or",
                "rules": [
                    {"preset": "rand_ucla"},
                    {"op": "and", "rules": [{"preset": "comet_70_15", "agree_pct": 70}]},
                ],
            },
            "rule.rules[1].rules[0].agree_pct",
            "unknown key 'agree_pct'",
        ),
        ({"preset": "delphi_magic"}, "rule.preset", "unknown preset 'delphi_magic'"),
        ({"op": "xor", "rules": [{"preset": "rand_ucla"}]}, "rule.op", "'xor'"),
        ({"op": "and", "rules": []}, "rule.rules", "non-empty list"),
        ({"op": "and"}, "rule.rules", "non-empty list"),
        ({"op": "and", "preset": "rand_ucla", "rules": []}, "rule", "exactly one of"),
        ({"min_n": 3}, "rule", "exactly one of"),
        ({"op": "or", "rules": ["comet_70_15"]}, "rule.rules[0]", "JSON object, got str"),
        ({"preset": "rand_ucla", "min_n": 0}, "rule.min_n", "integer >= 1, got 0"),
        ({"preset": "rand_ucla", "min_n": True}, "rule.min_n", "got True"),
        ({"preset": "rand_ucla", "min_n": "6"}, "rule.min_n", "got '6'"),
        ({"preset": "percent_agreement", "pct_at_least": 50}, "rule.pct_at_least", "> 50"),
        ({"preset": "percent_agreement", "pct_at_least": "75"}, "rule.pct_at_least", "'75'"),
        (
            {"preset": "comet_70_15", "agree_pct_at_least": 10},
            "rule.oppose_pct_below",
            "must not exceed agree_pct_at_least",
        ),
        (
            {"op": "and", "rules": [{"preset": "median_iqr", "median_at_least": 3}]},
            "rule.rules[0].out_median_at_most",
            "must be below median_at_least",
        ),
        ([{"preset": "rand_ucla"}], "rule", "JSON object, got list"),
    ],
)
def test_validation_names_the_bad_place(data, where, what):
    with pytest.raises(RuleError, match=re.escape(f"consensus rule at {where}: ")) as error:
        rule_from_dict(data)
    assert what in str(error.value)
    assert error.value.field == "consensus_rule"


def test_direct_construction_is_validated_too():
    with pytest.raises(RuleError, match=re.escape("rule.iqr_at_most")):
        MedianIqr(iqr_at_most=-2)
    with pytest.raises(RuleError, match=re.escape("rule.rules")):
        CombinedRule(op="and", rules=())
