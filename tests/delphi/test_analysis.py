"""Analysing a round: statistics per panel and group, outcomes, the stopping rule."""

from __future__ import annotations

import math

import pytest

from delphi import services
from delphi.models import RoundItemStatistics, Suggestion
from delphi.services import DelphiError
from tests.delphi.flow import (
    BASE_URL,
    item_stats,
    make_panel_study,
    run_round,
    submit_ratings,
)

# --------------------------------------------------------------------------- statistics


@pytest.mark.django_db
def test_statistics_for_the_panel_and_each_group_with_small_groups_withheld():
    # Groups cycle clinician, clinician, nurse: P01..P10 -> c c n c c n c c n c.
    built = make_panel_study(n_panelists=10, groups=("clinician", "clinician", "nurse"))
    first = built.round(1)
    services.open_round(round_=first, actor=built.coordinator, base_url=BASE_URL)
    diagnosis = [9, 8, 2, 7, None, 3, 8, 5, 1]  # P10 (a clinician) never submits
    for panelist, rating in zip(built.panelists, diagnosis, strict=False):
        submit_ratings(panelist, first, {"Diagnosis": rating})
    services.close_round(round_=first, actor=built.coordinator)
    services.analyse_round(round_=first, actor=built.coordinator)

    whole = item_stats(first, "Diagnosis")
    # Ratings 1 2 3 5 7 8 8 9 (one unable, one non-responder): median (5 + 7) / 2 = 6,
    # mean 43 / 8; linear quantiles: Q1 at 1.75 -> 2 + 0.75 = 2.75, Q3 at 5.25 -> 8,
    # P30 at 2.1 -> 3 + 0.1 * 2 = 3.2, P70 at 4.9 -> 7 + 0.9 = 7.9; IPR 4.7,
    # AI |5 - 5.55| = 0.55, IPRAS 2.35 + 0.825 = 3.175 < IPR: disagreement.
    assert (whole.n_invited, whole.n_rated, whole.n_unable) == (10, 8, 1)
    assert whole.median == 6 and whole.mean == pytest.approx(5.375)
    assert (whole.q1, whole.q3, whole.iqr) == pytest.approx((2.75, 8, 5.25))
    assert (whole.p30, whole.p70) == pytest.approx((3.2, 7.9))
    assert (whole.ipr, whole.ai, whole.ipras) == pytest.approx((4.7, 0.55, 3.175))
    assert whole.disagreement is True
    # Sum of squared deviations 65.875 over 7.
    assert whole.sd == pytest.approx(math.sqrt(65.875 / 7))
    assert (whole.pct_low, whole.pct_mid, whole.pct_high) == pytest.approx((37.5, 12.5, 50))
    assert whole.counts == {"1": 1, "2": 1, "3": 1, "4": 0, "5": 1, "6": 0, "7": 1, "8": 2, "9": 1}
    assert whole.outcome == "no_consensus"

    clinicians = item_stats(first, "Diagnosis", "clinician")
    # P01 9, P02 8, P04 7, P05 unable, P07 8, P08 5; P10 invited: 5 ratings 5 7 8 8 9.
    assert (clinicians.n_invited, clinicians.n_rated, clinicians.n_unable) == (7, 5, 1)
    assert (clinicians.median, clinicians.q1, clinicians.q3) == (8, 7, 8)
    assert clinicians.pct_high == 80 and clinicians.outcome == "consensus_in"

    nurses = item_stats(first, "Diagnosis", "nurse")
    # Three ratings (2, 3, 1) are under the minimum of five: nothing of them is stored.
    assert nurses.outcome == "withheld" and nurses.n_invited == 3
    assert nurses.n_rated == 0 and nurses.median is None and nurses.counts == {}
    assert RoundItemStatistics.objects.filter(round_item__round=first).count() == 6 * 3


@pytest.mark.django_db
def test_drafts_of_non_responders_are_never_counted():
    built = make_panel_study(n_panelists=3)
    first = built.round(1)
    services.open_round(round_=first, actor=built.coordinator, base_url=BASE_URL)
    submit_ratings(built.panelists[0], first, {"Diagnosis": 9})
    item = first.items.get(name="Diagnosis")
    services.save_answers(
        panelist=built.panelists[1], round_=first, answers={str(item.pk): {"rating": 1}}
    )
    services.close_round(round_=first, actor=built.coordinator)
    services.analyse_round(round_=first, actor=built.coordinator)
    row = item_stats(first, "Diagnosis")
    assert (row.n_invited, row.n_rated, row.median) == (3, 1, 9)


# A: 7 7 8 8 9 9 -> 100% high; median 8, IQR 8.75 - 7.25 = 1.5; P30 7.5, P70 8.5: IPR 1 <
#    IPRAS 2.35 + 1.5 * 3 = 6.85.
# B: 1 1 2 2 3 9 -> 83.3% low, 16.7% high; median 2, IQR 2.75 - 1.25 = 1.5; IPR 1 < 6.85.
RATINGS = {"Diagnosis": [7, 7, 8, 8, 9, 9], "Billing": [1, 1, 2, 2, 3, 9]}
COMET = {"preset": "comet_70_15"}
PERCENT = {"preset": "percent_agreement"}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("rule", "a", "b"),
    [
        (COMET, "consensus_in", "no_consensus"),  # B: 16.7% high is not < 15%
        (PERCENT, "consensus_in", "consensus_out"),
        ({"preset": "median_iqr"}, "no_consensus", "no_consensus"),  # IQR 1.5 > 1
        ({"preset": "median_iqr", "iqr_at_most": 1.5}, "consensus_in", "consensus_out"),
        ({"preset": "rand_ucla"}, "consensus_in", "consensus_out"),
        ({"op": "and", "rules": [COMET, PERCENT]}, "consensus_in", "no_consensus"),
        ({"op": "or", "rules": [COMET, PERCENT]}, "consensus_in", "consensus_out"),
        ({"op": "or", "rules": [COMET, PERCENT], "min_n": 7}, "too_few_ratings", "too_few_ratings"),
        ({"preset": "rand_ucla", "min_n": 6}, "consensus_in", "consensus_out"),
    ],
)
def test_outcomes_follow_the_locked_rule(rule, a, b):
    built = make_panel_study(n_panelists=6, consensus_rule=rule)
    run_round(built, built.round(1), RATINGS)
    assert item_stats(built.round(1), "Diagnosis").outcome == a
    assert item_stats(built.round(1), "Billing").outcome == b


# --------------------------------------------------------------------------- stopping


@pytest.mark.django_db
def test_stopping_decision_is_stored_when_analysed():
    built = make_panel_study(n_panelists=6, stopping_rule={"max_rounds": 2, "all_resolved": True})
    first = run_round(built, built.round(1), {"Diagnosis": [1, 9, 1, 9, 5, 5]})
    assert first.stopping_decision == {
        "stop": False,
        "criteria_met": [],
        "reasons": ["round 1 of at most 2", "1 of 6 items of round 1 without consensus"],
    }
    second = run_round(
        built,
        services.start_next_round(study=built.study, actor=built.coordinator),
        {"Diagnosis": [8, 9, 8, 9, 7, 7]},
    )
    assert second.stopping_decision["stop"] is True
    assert second.stopping_decision["criteria_met"] == ["max_rounds", "all_resolved"]
    with pytest.raises(DelphiError, match="stopping rule is met"):
        services.start_next_round(study=built.study, actor=built.coordinator)


@pytest.mark.django_db
def test_stability_compares_the_same_item_version_between_rounds():
    built = make_panel_study(
        n_panelists=6,
        stopping_rule={"stability": {"pct_unchanged_at_least": 80}},
        carry_over="drop_resolved",
    )
    contested = {"Diagnosis": [1, 9, 1, 9, 5, 5], "Billing": [1, 9, 1, 9, 5, 5]}
    run_round(built, built.round(1), contested)
    assert built.round(1).stopping_decision["reasons"] == ["stability needs two rounds to compare"]
    # Billing is reworded for round 2, so it has no comparison and blocks the stability stop.
    Suggestion.objects.create(
        round=built.round(1),
        panelist=built.panelists[0],
        kind="rename",
        target_identity=built.round(1).items.get(name="Billing").identity,
        details={"name": "Billing and coding"},
        text="clearer",
    )
    services.triage_suggestion(
        suggestion=Suggestion.objects.get(), actor=built.coordinator, accept=True, reason="clearer"
    )
    second = services.start_next_round(study=built.study, actor=built.coordinator)
    # 5 of 6 unchanged on Diagnosis = 83.3% >= 80.
    run_round(
        built, second, {"Diagnosis": [1, 9, 1, 9, 5, 6], "Billing and coding": contested["Billing"]}
    )
    second.refresh_from_db()
    assert second.stopping_decision["stop"] is False
    assert "1 of 2 unresolved items have fewer than 80%" in second.stopping_decision["reasons"][0]
    third = services.start_next_round(study=built.study, actor=built.coordinator)
    run_round(
        built, third, {"Diagnosis": [1, 9, 1, 9, 5, 6], "Billing and coding": [1, 9, 1, 9, 5, 5]}
    )
    third.refresh_from_db()
    assert third.stopping_decision["stop"] is True
    assert third.stopping_decision["criteria_met"] == ["stability"]
