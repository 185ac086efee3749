"""The design simulation (agreement.stats.planning_sim) against Bonett's formula where both
apply, and its handling of incomplete designs and bad input."""

from __future__ import annotations

import pytest

from agreement.stats.planning import PlanningInputError, bonett_items
from agreement.stats.planning_sim import (
    DesignSpec,
    components_for_icc,
    simulate_design,
    true_icc,
)


@pytest.mark.parametrize(("rho", "k"), [(0.6, 2), (0.7, 3), (0.8, 5)])
def test_simulated_median_width_agrees_with_bonett(rho: float, k: int) -> None:
    # complete one-way design at Bonett's n for w = .2: the median F-interval width of 400
    # seeded simulated studies is within 5% of .2 (measured: .2006, .1991, .1985 at 1000)
    plan = bonett_items(rho, k, 0.2)
    item, rater, error = components_for_icc(rho)
    spec = DesignSpec(item, rater, error, plan.n_items, k, k, n_studies=400, seed=3)
    result = simulate_design(spec)
    assert result.width_median == pytest.approx(0.2, rel=0.05)
    assert result.true_icc == pytest.approx(rho)
    assert 0.9 <= result.coverage <= 0.99
    assert result.icc_p05 < rho < result.icc_p95
    assert result.width_p90 > result.width_median


def test_incomplete_design_uses_the_one_way_estimator() -> None:
    item, rater, error = components_for_icc(0.7, rater_share=0.3)
    spec = DesignSpec(item, rater, error, 68, 3, 9, n_studies=200, seed=5)
    result = simulate_design(spec)
    assert "icc_oneway_unbalanced" in result.estimator
    # the rater effect is part of the noise in a one-way design: the target ICC stays 0.7
    assert result.true_icc == pytest.approx(0.7)
    assert result.width_median == pytest.approx(0.2, rel=0.08)
    assert 0.88 <= result.coverage <= 0.99


def test_seeded_and_reports_progress() -> None:
    spec = DesignSpec(1.0, 0.5, 1.0, 30, 3, 3, form="ICC(A,1)", n_studies=120, seed=11)
    seen: list[tuple[int, int]] = []
    first = simulate_design(spec, progress=lambda done, total: seen.append((done, total)))
    again = simulate_design(spec)
    assert first == again
    assert seen == [(50, 120), (100, 120), (120, 120)]
    assert first.true_icc == pytest.approx(1.0 / 2.25)
    assert true_icc(spec, "ICC(C,1)") == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"item_sd": 0.0}, "item_sd"),
        ({"error_sd": -1.0}, "error_sd"),
        ({"raters_per_item": 5, "n_raters": 4}, "raters_per_item"),
        ({"n_raters": 6, "form": "ICC(A,1)"}, "form"),
        ({"form": "ICC(9,9)"}, "form"),
        ({"n_studies": 10**6}, "n_studies"),
        ({"n_items": 2}, "n_items"),
    ],
)
def test_bad_spec_names_the_field(changes: dict, field: str) -> None:
    base = {
        "item_sd": 1.0,
        "rater_sd": 0.0,
        "error_sd": 1.0,
        "n_items": 30,
        "raters_per_item": 3,
        "n_raters": 3,
    }
    with pytest.raises(PlanningInputError) as info:
        simulate_design(DesignSpec(**(base | changes)))
    assert info.value.field == field


def test_medhelm_pairs_spread_and_sparse_designs() -> None:
    # MedHELM's mean ICC(3,2) over clinician pairs: no per-study interval, the spread of its
    # estimates instead. Dense (4 clinicians, ~33 shared items a pair) it centres near the
    # ICC(3,2) the components imply; sparse (8 clinicians, ~7 shared items a pair) the mean over
    # pairs spreads far wider, which is what a planner needs to see.
    dense = simulate_design(
        DesignSpec(1.0, 0.4, 0.8, 200, 2, 4, form="MedHELM pairs", n_studies=60, seed=1)
    )
    assert dense.width_median is None and dense.coverage is None
    assert "clinician_pairwise" in dense.estimator
    assert dense.true_icc == pytest.approx(1 / (1 + 0.64 / 2))
    assert dense.icc_median == pytest.approx(dense.true_icc, abs=0.05)
    sparse = simulate_design(
        DesignSpec(1.0, 0.4, 0.8, 200, 2, 8, form="MedHELM pairs", n_studies=60, seed=1)
    )
    assert sparse.estimate_range95 > 3 * dense.estimate_range95


def test_medhelm_pairs_need_two_raters_per_item() -> None:
    with pytest.raises(PlanningInputError) as info:
        simulate_design(DesignSpec(1.0, 0.0, 1.0, 30, 3, 6, form="MedHELM pairs"))
    assert info.value.field == "raters_per_item"
