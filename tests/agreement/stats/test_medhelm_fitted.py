"""The machine side with the clinicians' offsets fitted (agreement.stats.medhelm.fitted):
its values from the two-way fit, its invariances, and its errors."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

from agreement.stats.bootstrap import resample_weights
from agreement.stats.icc_twoway_incomplete import icc_consistency_incomplete
from agreement.stats.medhelm import (
    MACHINE_FITTED,
    PAIRWISE,
    TWOWAY,
    FittedMachine,
    FittedMachineStatistic,
    bootstrap_machine_minus_clinicians,
    clinician_alpha_twoway,
    clinician_twoway,
    fitted,
    machine_vs_clinicians_fitted,
)
from agreement.stats.medhelm.fitted import FITTED_QUANTITIES
from agreement.stats.shared import shared_work
from agreement.stats.simulation import MACHINE, Design, score_table, simulate_matrix


def _study(design: Design, seed: int) -> tuple[np.ndarray, np.ndarray]:
    return simulate_matrix(np.random.default_rng(seed), design)


def test_clinician_terms_equal_the_two_way_fit() -> None:
    x, machine = _study(Design(120, 8, 2), seed=1)
    scores = score_table(x, machine)
    clin = scores.loc[scores["rater_kind"] == "clinician"]
    fitted = machine_vs_clinicians_fitted(scores, machine=MACHINE)
    assert fitted.clinicians == pytest.approx(clinician_twoway(clin).icc, abs=1e-12)
    assert fitted.difference == pytest.approx(fitted.icc - fitted.clinicians, abs=1e-15)
    single = icc_consistency_incomplete(x, k=1.0)
    alpha = clinician_alpha_twoway(clin)
    assert (alpha.estimate, alpha.ci_low, alpha.ci_high) == pytest.approx(
        (single.icc, single.ci_low, single.ci_high)
    )
    assert fitted.n_items == 120 and fitted.n_clinicians == 8
    # 120 items x 2 ratings over 8 clinicians: what decides the cell's mark
    assert fitted.ratings_per_clinician == pytest.approx(2 * 120 / 8)


def test_ratings_per_clinician_counts_the_machines_items_and_the_kept_clinicians() -> None:
    x, machine = _study(Design(100, 29, 2), seed=7)
    machine[:10] = np.nan  # items the machine did not score do not count
    fitted = machine_vs_clinicians_fitted(score_table(x, machine), machine=MACHINE)
    rated = ~np.isnan(x[10:])
    assert fitted.n_items == 90
    assert fitted.ratings_per_clinician == pytest.approx(rated.sum() / fitted.n_clinicians)


def test_clinician_offsets_and_machine_scale_do_not_change_it() -> None:
    # offsets are fitted (a clinician shifted by a constant changes nothing) and the machine
    # enters through its correlation (a linear rescaling changes nothing)
    x, machine = _study(Design(100, 10, 2), seed=2)
    base = machine_vs_clinicians_fitted(score_table(x, machine), machine=MACHINE)
    shifted = x + np.linspace(-3.0, 3.0, x.shape[1])[None, :]
    moved = machine_vs_clinicians_fitted(score_table(shifted, 5 + 2 * machine), machine=MACHINE)
    assert (moved.icc, moved.alpha_interval) == pytest.approx((base.icc, base.alpha_interval))


def test_sets_of_clinicians_sharing_no_item_are_centred_apart() -> None:
    # two sets of clinicians that share no item: their relative offset is not identified, so
    # moving one set by a constant must not move the statistic
    x, machine = _study(Design(120, 4, 2), seed=3)
    split = np.full((240, 8), np.nan)
    split[:120, :4] = x
    second, machine2 = _study(Design(120, 4, 2), seed=4)
    split[120:, 4:] = second
    both = np.concatenate([machine, machine2])
    base = machine_vs_clinicians_fitted(score_table(split, both), machine=MACHINE)
    moved = split.copy()
    moved[:, 4:] += 10.0
    after = machine_vs_clinicians_fitted(score_table(moved, both), machine=MACHINE)
    assert after.icc == pytest.approx(base.icc, abs=1e-9)
    # and in a resample: the statistic per weights row is the same for both
    w = np.random.default_rng(5).multinomial(240, np.full(240, 1 / 240), size=20).astype(float)
    a = FittedMachine(score_table(split, both), machine=MACHINE, on_degenerate="raise")
    b = FittedMachine(score_table(moved, both), machine=MACHINE, on_degenerate="raise")
    np.testing.assert_allclose(a.quantities(w)["icc"], b.quantities(w)["icc"], atol=1e-9)


def test_statistic_on_unit_weights_is_the_point_value() -> None:
    x, machine = _study(Design(80, 6, 2), seed=6)
    scores = score_table(x, machine)
    core = FittedMachine(scores, machine=MACHINE, on_degenerate="raise")
    point = machine_vs_clinicians_fitted(scores, machine=MACHINE)
    assert FittedMachineStatistic(core, "icc").estimate() == pytest.approx(point.icc)
    with pytest.raises(ValueError, match="quantity must be one of"):
        FittedMachineStatistic(core, "kappa")


def test_the_fitted_machine_side_goes_with_the_two_way_form_only() -> None:
    x, machine = _study(Design(60, 6, 2), seed=7)
    scores = score_table(x, machine)
    with pytest.raises(ValueError, match="two-way clinician form"):
        bootstrap_machine_minus_clinicians(
            scores, machine=MACHINE, clinician_form=PAIRWISE, machine_side=MACHINE_FITTED
        )
    with pytest.raises(ValueError, match="machine_side must be one of"):
        bootstrap_machine_minus_clinicians(
            scores, machine=MACHINE, clinician_form=TWOWAY, machine_side="raw"
        )
    with pytest.raises(ValueError, match="clinician_form must be one of"):
        bootstrap_machine_minus_clinicians(scores, machine=MACHINE, clinician_form="mean")


def test_a_cell_without_a_fitted_value_says_why_instead_of_giving_nan() -> None:
    # Each item rated by one clinician only: once the offsets are fitted nothing is left to
    # estimate the error from. Before, the value was nan and the report said "ICC nan is
    # outside [-1, 1]".
    x, machine = _study(Design(30, 3, 2), seed=5)
    alone = np.full_like(x, np.nan)
    for item in range(x.shape[0]):
        alone[item, item % x.shape[1]] = 1.0 + (7 * item) % 5
    with pytest.raises(ValueError, match="no error degrees of freedom"):
        machine_vs_clinicians_fitted(score_table(alone, machine), machine=MACHINE)


def test_a_cell_whose_clinicians_all_drop_out_names_them() -> None:
    # every clinician rated one item (no z-score: dropped); before, numpy's "attempt to get
    # argmax of an empty sequence" reached the report as the cell's reason
    x, machine = _study(Design(30, 3, 2), seed=6)
    one_each = np.full_like(x, np.nan)
    for rater in range(x.shape[1]):
        one_each[rater, rater] = 1.0 + rater
    with pytest.raises(ValueError, match="no clinician left after dropping 3"):
        machine_vs_clinicians_fitted(
            score_table(one_each, machine), machine=MACHINE, on_degenerate="drop"
        )


def test_machines_of_one_study_share_the_clinicians_fit_of_equal_resamples() -> None:
    # every machine of a report's row refits the same clinicians on the same resamples: inside
    # shared_work the fit is computed once, and each machine's values are what they are alone
    x, machine = _study(Design(60, 6, 2), seed=8)
    scores = score_table(x, machine)
    other = scores.copy()
    is_machine = other["rater"] == MACHINE
    other.loc[is_machine, "value"] = other.loc[is_machine, "value"] ** 3
    weights = resample_weights(np.random.default_rng(1), 60, 30)
    alone = [
        FittedMachine(t, machine=MACHINE, on_degenerate="raise").quantities(weights)
        for t in (scores, other)
    ]
    with (
        mock.patch.object(fitted, "fit_from_weights", wraps=fitted.fit_from_weights) as fits,
        shared_work(),
    ):
        together = [
            FittedMachine(t, machine=MACHINE, on_degenerate="raise").quantities(weights.copy())
            for t in (scores, other)
        ]
    # the full data's fit (each machine's check that its value is defined), then the resamples'
    assert [call.args[1].shape[0] for call in fits.call_args_list] == [1, 30]
    for a, b in zip(alone, together, strict=True):
        for key in FITTED_QUANTITIES:
            np.testing.assert_array_equal(a[key], b[key])
    assert not np.allclose(together[0]["icc"], together[1]["icc"])
