"""The ordinal alpha of a two-column table from each column's own ranks
(agreement.stats.alpha_paired) against the pooled values' ranks (weighted_alphas), bit for bit:
on random tables with ties within each column, with near-ties across the columns (which it
must leave to the pooled ranks), and through the machine statistic on MedHELM-like scores,
resamples and jackknife rows both."""

from __future__ import annotations

import numpy as np
import pytest

from agreement.stats import weighted_alphas
from agreement.stats.alpha_batch import unsorted
from agreement.stats.alpha_paired import own_ranks, paired_ordinal_alpha
from agreement.stats.bootstrap import resample_weights
from agreement.stats.medhelm.alpha import machine_alpha_statistics
from agreement.stats.medhelm.machine import MachineVsClinicianStatistic
from agreement.stats.shared import shared_work

from .factories import medhelm_like_scores


def _pooled(first: np.ndarray, second: np.ndarray, weights: np.ndarray) -> np.ndarray:
    b, n = first.shape
    values = np.stack([first, second], axis=2).reshape(b, -1)
    present = np.repeat(weights > 0, 2, axis=1)
    unit = np.repeat(np.arange(n), 2)
    return weighted_alphas(values, present, unit, weights, levels=("ordinal",))["ordinal"]


def _table(rng: np.random.Generator, *, n: int, rows: int, n_levels: int, cross_ties: bool):
    """A first column with ties (a few distinct values, rescaled per row), a second column of
    ``n_levels`` levels under an increasing affine map per row, bootstrap weights; with
    ``cross_ties`` some first values are set to a level (exactly, or off by rounding)."""
    base_levels = np.sort(rng.choice(np.arange(-30, 30) / 7.0, size=n_levels, replace=False))
    level = rng.integers(0, n_levels, size=n)
    shift, scale = rng.normal(size=(rows, 1)), rng.uniform(0.5, 2.0, size=(rows, 1))
    levels = (base_levels[None, :] - shift) / scale
    first = rng.choice(rng.normal(size=max(n // 3, 2)), size=(rows, n)) * scale
    if cross_ties:
        hit = rng.random((rows, n)) < 0.05
        pick = levels[np.arange(rows)[:, None], rng.integers(0, n_levels, size=(rows, n))]
        nudge = rng.choice([0.0, 1e-16, -3e-16], size=(rows, n))
        first = np.where(hit, pick + nudge, first)
    weights = resample_weights(rng, n, rows)
    weights[rng.random((rows, n)) < 0.1] = 0.0  # an item without its second value
    second = levels[np.arange(rows)[:, None], level[None, :]]
    return first, levels, level, weights, second


def _hint(first_ranks, levels: np.ndarray) -> np.ndarray:
    out = np.empty(first_ranks.sorted_values.shape, dtype=np.int64)
    for row in range(levels.shape[0]):
        out[row] = np.searchsorted(levels[row], first_ranks.sorted_values[row])
    return unsorted(out, first_ranks.positions)


@pytest.mark.parametrize("n_levels", [2, 13, 60])
def test_paired_ranks_give_the_pooled_ordinal_alpha_bit_for_bit(n_levels: int) -> None:
    rng = np.random.default_rng(n_levels)
    computed_rows = 0
    for _ in range(20):
        first, levels, level, weights, second = _table(
            rng, n=90, rows=30, n_levels=n_levels, cross_ties=False
        )
        ranks = own_ranks(first, weights)
        alpha, computed = paired_ordinal_alpha(
            first, ranks, levels, level, weights, _hint(ranks, levels)
        )
        expected = _pooled(first, second, weights)
        np.testing.assert_array_equal(alpha[computed], expected[computed])
        computed_rows += int(computed.sum())
    assert computed_rows == 20 * 30  # no near-tie across the columns: every row computed


def test_near_ties_across_the_columns_are_left_to_the_pooled_ranks() -> None:
    rng = np.random.default_rng(3)
    first, levels, level, weights, second = _table(rng, n=90, rows=40, n_levels=13, cross_ties=True)
    ranks = own_ranks(first, weights)
    alpha, computed = paired_ordinal_alpha(
        first, ranks, levels, level, weights, _hint(ranks, levels)
    )
    assert 0 < computed.sum() < computed.size  # some rows hold a tie across, some not
    expected = _pooled(first, second, weights)
    np.testing.assert_array_equal(alpha[computed], expected[computed])


def test_a_hint_off_by_more_than_one_is_caught_not_used() -> None:
    rng = np.random.default_rng(5)
    first, levels, level, weights, second = _table(
        rng, n=60, rows=10, n_levels=40, cross_ties=False
    )
    ranks = own_ranks(first, weights)
    good = _hint(ranks, levels)
    alpha, computed = paired_ordinal_alpha(first, ranks, levels, level, weights, good)
    assert computed.all()
    _, wrong = paired_ordinal_alpha(first, ranks, levels, level, weights, good + 3)
    assert not wrong.any()
    np.testing.assert_array_equal(alpha, _pooled(first, second, weights))


@pytest.mark.parametrize("discrete", [False, True], ids=["continuous", "judge-like 1-5"])
def test_the_machine_alpha_equals_the_pooled_ranks_on_resamples_and_jackknife(discrete) -> None:
    scores = medhelm_like_scores(np.random.default_rng(21), n_items=120, n_clinicians=6)
    if discrete:  # a judge's 1-5 verdicts: 13 composites, many items tied
        jury = scores["rater"] == "jury"
        scores.loc[jury, "value"] = scores.loc[jury, "value"].round().clip(1, 5)
    with shared_work():
        base = MachineVsClinicianStatistic(scores, machine="jury")
        ordinal = machine_alpha_statistics(base, levels=("ordinal",))[0]
        resamples = resample_weights(np.random.default_rng(4), base.n_items, 300)
        jackknife = 1.0 - np.eye(base.n_items)
        for weights in (resamples, jackknife):
            use, c, z = base.columns(weights)
            np.testing.assert_array_equal(ordinal.from_weights(weights), _pooled(c, z, use))


def test_first_values_tied_only_at_the_pooled_tolerance_are_left_to_the_pooled_ranks() -> None:
    # the tie tolerance is relative to the largest pooled |value|: second values near 100 make
    # 5e-9 a tie, which the first column's own ranks (its values at most 1) do not see
    first = np.array([[0.2, 0.2 + 5e-9, 0.7, -0.4, 0.9, 0.3]])
    levels = np.array([[-100.0, 0.5, 100.0]])
    level = np.array([0, 1, 2, 1, 0, 2])
    weights = np.ones((1, 6))
    ranks = own_ranks(first, weights)
    _, computed = paired_ordinal_alpha(first, ranks, levels, level, weights, _hint(ranks, levels))
    assert not computed.any()
    assert not np.isnan(_pooled(first, levels[:, level], weights)).any()
