"""Krippendorff's alpha beside MedHELM's ICCs: the per-resample closed forms against the
krippendorff package (a resample = its items replicated as drawn), the published 2011
example, the statistics' point estimates against the package on the same z-scores, and the
ICC's interval unchanged when alpha is bootstrapped with it.

Tolerance 1e-9 against the package (both are exact formulas in double precision); the
published values to their 3 printed decimals, 0.849107 to 5e-7 (REFERENCES.md).
"""

from __future__ import annotations

from unittest import mock

import krippendorff
import numpy as np
import pandas as pd
import pytest

from agreement.stats import (
    ALPHA_LEVELS,
    bootstrap_clinician_alpha,
    bootstrap_machine_vs_clinicians,
    bootstrap_machine_with_alpha,
    krippendorff_alpha,
    ordinal_alpha,
    weighted_alphas,
)
from agreement.stats.alpha_batch import equal_values, weighted_midranks
from agreement.stats.bootstrap import resample_weights
from agreement.stats.medhelm import machine
from agreement.stats.medhelm.alpha import clinician_alpha_statistics, machine_alpha_statistics
from agreement.stats.medhelm.machine import MachineVsClinicianStatistic
from agreement.stats.shared import shared_work

from .factories import KRIPPENDORFF_2011, hand_case, medhelm_like_scores

TOL = 1e-9


def _flat(reliability: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """coders x units -> values, presence and unit of each cell, ordered by unit."""
    values = reliability.T.ravel()
    unit = np.repeat(np.arange(reliability.shape[1]), reliability.shape[0])
    return np.nan_to_num(values), ~np.isnan(values), unit


@pytest.mark.parametrize(
    ("level", "published", "exact"), [("interval", 0.849, 0.849107), ("ordinal", 0.815, None)]
)
def test_batch_form_gives_the_2011_example(level: str, published: float, exact: float | None):
    values, present, unit = _flat(KRIPPENDORFF_2011)
    got = weighted_alphas(
        values[None, :], present[None, :], unit, np.ones((1, 12)), levels=(level,)
    )[level][0]
    assert got == pytest.approx(published, abs=5e-4)
    if exact is not None:
        assert got == pytest.approx(exact, abs=5e-7)


@pytest.mark.parametrize("level", ALPHA_LEVELS)
@pytest.mark.parametrize("continuous", [False, True])
def test_weighted_resamples_equal_the_package_on_replicated_units(level: str, continuous: bool):
    rng = np.random.default_rng(3)
    n_units, n_coders = 25, 4
    data = rng.normal(size=(n_coders, n_units)) + rng.normal(size=n_units)
    if not continuous:  # Likert values: many ties
        data = np.clip(np.round(3 + data), 1, 5)
    data[rng.random(data.shape) < 0.35] = np.nan
    values, present, unit = _flat(data)
    weights = rng.integers(0, 4, size=(6, n_units)).astype(float)
    got = weighted_alphas(
        np.tile(values, (6, 1)), np.tile(present, (6, 1)), unit, weights, levels=(level,)
    )[level]
    for b in range(6):
        drawn = np.repeat(np.arange(n_units), weights[b].astype(int))
        ref = krippendorff.alpha(reliability_data=data[:, drawn], level_of_measurement=level)
        assert got[b] == pytest.approx(ref, abs=TOL)


def test_ordinal_closed_form_equals_the_package_on_continuous_values_with_ties():
    rng = np.random.default_rng(5)
    data = np.round(rng.normal(size=(3, 40)) + rng.normal(size=40), 1)  # ties, many values
    data[rng.random(data.shape) < 0.2] = np.nan
    units = np.tile(np.arange(40), 3)
    ours = ordinal_alpha(units, data.ravel())
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")
    assert ours == pytest.approx(ref, abs=TOL)


def test_undefined_without_variation_or_pairs():
    values = np.array([[2.0, 2.0, 2.0, 2.0]])
    present = np.ones((1, 4), dtype=bool)
    unit = np.array([0, 0, 1, 1])
    out = weighted_alphas(values, present, unit, np.ones((1, 2)))
    assert all(np.isnan(v[0]) for v in out.values())
    lonely = weighted_alphas(
        np.array([[1.0, 2.0]]), np.ones((1, 2), dtype=bool), np.array([0, 1]), np.ones((1, 2))
    )
    assert all(np.isnan(v[0]) for v in lonely.values())
    with pytest.raises(ValueError, match="ordered by unit"):
        weighted_alphas(values, present, np.array([1, 0, 0, 1]), np.ones((1, 2)))


def _clinician_z_matrix(scores: pd.DataFrame) -> np.ndarray:
    """clinicians x items z-composites (ddof = 1, within clinician), NaN where not rated."""
    clin = scores.loc[scores["rater_kind"] == "clinician"]
    comp = clin.groupby(["rater", "item"])["value"].mean().unstack("item")
    z = comp.sub(comp.mean(axis=1), axis=0).div(comp.std(axis=1, ddof=1), axis=0)
    return z.to_numpy()


@pytest.mark.parametrize("level", ALPHA_LEVELS)
def test_clinician_alpha_on_the_hand_case(level: str):
    # hand_case's z-scores: A -1, 0, 1 on i1-i3; B -1, 0, 1 on i2-i4; C 0, 1, -1 on i1, i3, i4.
    expected = krippendorff.alpha(
        reliability_data=[[-1, 0, 1, np.nan], [np.nan, -1, 0, 1], [0, np.nan, 1, -1]],
        level_of_measurement=level,
    )
    stats = dict(zip(ALPHA_LEVELS, clinician_alpha_statistics(hand_case()), strict=True))
    assert stats[level].estimate() == pytest.approx(expected, abs=TOL)
    assert stats[level].from_weights(np.ones((1, 4)))[0] == pytest.approx(expected, abs=TOL)


@pytest.mark.parametrize("level", ALPHA_LEVELS)
def test_clinician_alpha_resamples_restandardise_like_the_package_on_the_drawn_items(level):
    scores = medhelm_like_scores(np.random.default_rng(8), n_items=30, n_clinicians=5)
    stats = dict(zip(ALPHA_LEVELS, clinician_alpha_statistics(scores), strict=True))
    stat = stats[level]
    assert stat.estimate() == pytest.approx(
        krippendorff.alpha(
            reliability_data=_clinician_z_matrix(scores), level_of_measurement=level
        ),
        abs=TOL,
    )
    weights = np.random.default_rng(1).integers(0, 3, size=(3, stat.n_items)).astype(float)
    got = stat.from_weights(weights)
    for b in range(3):
        # The resample as a data set: every drawn item copied under its own name, z-scores
        # recomputed within clinician on it (what restandardize=True means).
        copies = []
        for item, w in zip(stat.items, weights[b].astype(int), strict=True):
            rows = scores.loc[scores["item"] == item]
            copies += [rows.assign(item=f"{item}#{c}") for c in range(w)]
        drawn = pd.concat(copies)
        ref = krippendorff.alpha(
            reliability_data=_clinician_z_matrix(drawn), level_of_measurement=level
        )
        assert got[b] == pytest.approx(ref, abs=TOL)


@pytest.mark.parametrize("machine", ["jury", "rougeL"])
def test_machine_alpha_is_alpha_of_the_icc_table(machine: str):
    scores = medhelm_like_scores(np.random.default_rng(4))
    base = MachineVsClinicianStatistic(scores, machine=machine)
    table = base.agreement.table
    reliability = table[["clinician_z", "machine_z"]].to_numpy().T
    for stat in machine_alpha_statistics(base):
        ref = krippendorff.alpha(reliability_data=reliability, level_of_measurement=stat.level)
        assert stat.estimate() == pytest.approx(ref, abs=TOL)
        assert stat.from_weights(np.ones((1, base.n_items)))[0] == pytest.approx(ref, abs=TOL)
        assert krippendorff_alpha(
            table.melt(id_vars="item", value_vars=["clinician_z", "machine_z"], var_name="rater"),
            level=stat.level,
        ).alpha == pytest.approx(ref, abs=TOL)


def test_alpha_is_bootstrapped_on_the_icc_resamples_and_leaves_the_icc_unchanged():
    scores = medhelm_like_scores(np.random.default_rng(6))
    boot = {"n_resamples": 300, "seed": 17, "confidence": 0.95}
    together = bootstrap_machine_with_alpha(scores, machine="jury", **boot)
    alone = bootstrap_machine_vs_clinicians(scores, machine="jury", **boot)
    assert (together["icc"].ci_low, together["icc"].ci_high) == (alone.ci_low, alone.ci_high)
    np.testing.assert_array_equal(together["icc"].distribution, alone.distribution)
    for level in ALPHA_LEVELS:
        res = together[f"alpha_{level}"]
        assert res.n_valid == 300
        assert res.ci_low < res.estimate < res.ci_high
    clin = bootstrap_clinician_alpha(scores, **boot)
    assert set(clin) == {"alpha_interval", "alpha_ordinal"}
    assert all(np.isfinite(r.ci_low) and np.isfinite(r.ci_high) for r in clin.values())


def _random_z_table(rng: np.random.Generator) -> tuple:
    """Values of 1-4 per unit (unequal) from few raters' Likert composites, z-scored per row
    by a mean and SD per rater (some rows with equal scales: ties across raters too), some
    raters absent in a row, whole-number unit weights."""
    n_units, n_raters, rows = int(rng.integers(2, 40)), int(rng.integers(1, 6)), 5
    unit = np.repeat(np.arange(n_units), rng.integers(1, 5, size=n_units))
    rater = rng.integers(0, n_raters, size=unit.size)
    x = rng.integers(0, 4, size=unit.size) / 3.0
    mean = rng.normal(size=(rows, n_raters))
    sd = rng.choice([0.5, 1.0, 2.0], size=(rows, n_raters))
    if rng.random() < 0.3:
        mean[:], sd[:] = 0.0, 1.0
    present = (rng.random((rows, n_raters)) < 0.9)[:, rater]
    z = np.where(present, (x[None, :] - mean[:, rater]) / sd[:, rater], 0.0)
    weights = rng.integers(0, 3, size=(rows, n_units)).astype(float)
    # a value without weight takes no part, whatever it holds
    z = np.where(weights[:, unit] * present > 0, z, rng.normal(size=z.shape))
    return z, present, unit, weights, equal_values(np.column_stack([rater, x]))


def test_ranking_groups_of_equal_values_gives_the_same_ranks_and_alphas():
    rng = np.random.default_rng(11)
    grouped_tables = 0
    for _ in range(300):
        z, present, unit, weights, groups = _random_z_table(rng)
        grouped_tables += groups.starts.size <= z.shape[1] // 2  # else ranked value by value
        wv = weights[:, unit] * present
        np.testing.assert_array_equal(weighted_midranks(z, wv, groups), weighted_midranks(z, wv))
        grouped = weighted_alphas(z, present, unit, weights, groups=groups)
        for level, alpha in weighted_alphas(z, present, unit, weights).items():
            np.testing.assert_array_equal(grouped[level], alpha)
    assert grouped_tables > 200


def test_a_machines_equal_columns_hold_equal_values_in_every_resample():
    scores = medhelm_like_scores(np.random.default_rng(9), n_items=80, n_clinicians=3)
    base = MachineVsClinicianStatistic(scores, machine="jury")
    groups = base.equal_columns()
    assert groups.starts.size < 2 * base.n_items  # items with the same clinicians and scores
    weights = resample_weights(np.random.default_rng(2), base.n_items, 50)
    use, c, z = base.columns(weights)
    values = np.stack([c, z], axis=2).reshape(50, -1)
    held = np.repeat(use > 0, 2, axis=1)
    for g in range(groups.starts.size):
        members = values[:, groups.codes == g]
        weighted = held[:, groups.codes == g]
        for row, mask in zip(members, weighted, strict=True):
            assert np.unique(row[mask]).size <= 1


def test_the_machines_alphas_alone_are_the_ones_computed_with_its_icc():
    scores = medhelm_like_scores(np.random.default_rng(6))
    boot = {"n_resamples": 200, "seed": 5, "confidence": 0.95}
    together = bootstrap_machine_with_alpha(scores, machine="jury", **boot)
    alone = bootstrap_machine_with_alpha(scores, machine="jury", results=("alpha_ordinal",), **boot)
    assert set(alone) == {"alpha_ordinal"}
    ordinal, same = together["alpha_ordinal"], alone["alpha_ordinal"]
    np.testing.assert_array_equal(same.distribution, ordinal.distribution)
    assert (same.ci_low, same.ci_high, same.acceleration) == (
        ordinal.ci_low,
        ordinal.ci_high,
        ordinal.acceleration,
    )
    # each of the others alone too: the ICC without any alpha, the interval alpha without
    # the ordinal
    for key in ("icc", "alpha_interval"):
        one = bootstrap_machine_with_alpha(scores, machine="jury", results=(key,), **boot)
        assert set(one) == {key}
        np.testing.assert_array_equal(one[key].distribution, together[key].distribution)
    with pytest.raises(ValueError, match="results must be some of"):
        bootstrap_machine_with_alpha(scores, machine="jury", results=("kappa",), **boot)


def test_ordinal_alpha_is_interval_alpha_on_the_mid_ranks_bit_for_bit():
    # ordinal alpha sums the ranks unit by unit (exact in halves and quarters), interval alpha
    # value by value after centring: the same numbers
    rng = np.random.default_rng(12)
    for _ in range(200):
        n_units = int(rng.integers(2, 50))
        per_unit = rng.integers(1, 5, size=n_units)
        if rng.random() < 0.5:
            per_unit[:] = rng.integers(1, 4)  # regular units
        unit = np.repeat(np.arange(n_units), per_unit)
        values = np.round(rng.normal(size=(6, unit.size)), int(rng.integers(0, 3)))  # ties
        present = rng.random(values.shape) < 0.85
        weights = rng.integers(0, 4, size=(6, n_units)).astype(float)
        counts = np.stack([np.bincount(unit, weights=row, minlength=n_units) for row in present])
        pairable = np.where(counts >= 2, weights, 0.0)[:, unit] * present
        ranks = weighted_midranks(values, pairable)
        ordinal = weighted_alphas(values, present, unit, weights, levels=("ordinal",))
        interval = weighted_alphas(ranks, present, unit, weights, levels=("interval",))
        np.testing.assert_array_equal(ordinal["ordinal"], interval["interval"])


def test_machines_of_one_row_share_the_clinicians_means_of_equal_resamples():
    scores = medhelm_like_scores(np.random.default_rng(3))
    weights = resample_weights(np.random.default_rng(4), 56, 40)
    alone = [
        MachineVsClinicianStatistic(scores, machine=m).columns(weights) for m in ("jury", "rougeL")
    ]
    with (
        mock.patch.object(machine, "weighted_sd", wraps=machine.weighted_sd) as sds,
        shared_work(),
    ):
        together = [
            MachineVsClinicianStatistic(scores, machine=m).columns(weights.copy())
            for m in ("jury", "rougeL")
        ]
    # the clinicians' means and SDs once, each machine's own
    assert [call.args[1].shape[1] for call in sds.call_args_list] == [8, 1, 1]
    for a, b in zip(alone, together, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)
