"""The machine against the clinicians on an incomplete design, with each clinician's offset
fitted jointly with the items (the two-way model of :mod:`.twoway`), not z-scored over the
handful of items a clinician rated.

Why: with each item rated by 2 of 29 clinicians on 100 items, a clinician rated about 7
items; z-scores from 7 items' mean and SD bias MedHELM's machine ICC(3,2) and the alphas and
their item-bootstrap intervals covered 87.5-88.5% (bench/README.md, issue 21).

The statistics are the population values MedHELM's z-scored statistics estimate, written in
the two-way model's terms (x_ij = mu_j + a_i + e_ij for clinician j on item i, the machine
y_i with SD s_y) and estimated from the fit:

- s2_item, s2_e: Henderson III (:func:`agreement.stats.icc_twoway_incomplete.fit_from_weights`);
- cov(a_i, y_i): the sample covariance of the machine with the clinicians' offset-adjusted
  item mean r_i = mean_j (x_ij - mu_hat_j). The offsets are fitted from within-item
  contrasts, so their error involves the clinicians' errors only: it adds to the variance of
  r_i but not to its covariance with the machine, and the covariance is unbiased;
- the clinicians' mean z-score of an item has variance v = (s2_item + s2_e * mean(1/n_i)) /
  (s2_item + s2_e) (n_i clinicians on item i) and covariance c = cov(a, y) /
  sqrt((s2_item + s2_e) s_y^2) with the machine's z-score (variance 1);
- machine ICC(3,2) = ICC(C,2) of the two columns = 4c / (v + 1 + 2c);
- machine interval alpha = 2c / (v + 1) (its value for two columns with equal means,
  as z-scores have); v is held to at least c^2 (a correlation of at most 1), so both are at
  most 1;
- the clinicians' ICC(C,2) = s2_item / (s2_item + s2_e / 2) (:mod:`.twoway`) and the
  difference machine minus clinicians from the same fit.

Where every clinician shares the same scale width (the z-scores then remove the offsets
only) these are the values MedHELM's z-scored statistics estimate; where clinicians differ
in spread the fitted form does not rescale them (a wider clinician adds to s2_e), as in
:mod:`.twoway`. Intervals: the item bootstrap of the whole fitted statistic, offsets and
variances refitted on every resample, percentile (FITTED_METHOD; :mod:`.intervals`); the
clinicians' interval alpha
with the offsets fitted is ICC(C,1) of the same model, with Wald's exact interval
(:func:`clinician_alpha_twoway`).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..bootstrap import ItemStatistic
from ..icc_twoway_incomplete import WeightedFit, fit_from_weights, icc_consistency_incomplete
from ..shared import CHUNKS_KEPT, fingerprint, remembered
from .study_set import machine_vector, study_set
from .twoway import STEP_UP_TO

#: The bootstrap interval the fitted statistics are reported with, chosen by simulation
#: (bench/README.md, issue 21): with 2 of 29 clinicians per item BCa's bias correction and
#: acceleration, estimated from resamples that leave a clinician a few distinct items,
#: undercovered the difference (85-92%) where the percentile interval covered.
FITTED_METHOD = "percentile"
#: What :class:`FittedMachineStatistic` can give, by key.
FITTED_QUANTITIES: dict[str, str] = {
    "icc": "ICC(3,2) {machine} vs clinicians, clinician offsets fitted",
    "alpha_interval": "interval alpha {machine} vs clinicians, clinician offsets fitted",
    "clinicians": "two-way ICC(C,2) clinician vs clinician",
    "difference": "ICC(3,2) {machine} vs clinicians minus two-way ICC(C,2) clinicians",
}


class _ClinicianSide(NamedTuple):
    """Per resample (rows of B), what the fitted quantities read of the clinicians alone."""

    used: np.ndarray  # (B, n) the weights of the items the machine scored
    sets: np.ndarray  # (B, n) each item's connected set of clinicians
    n_sets: np.ndarray  # (B,) sets holding a used item
    centred_means: np.ndarray  # (B, n) offset-adjusted clinician means, centred in their set
    used_n: np.ndarray  # (B,) total used weight
    mean_inverse_n: np.ndarray  # (B,) the used items' mean 1 / (clinicians rating it)


class FittedMachine:
    """The clinicians' two-way fit and the machine's moments for item weights (B, n), shared
    by the statistics of one machine (each weights array is computed once)."""

    def __init__(self, scores: pd.DataFrame, *, machine: object, on_degenerate: str) -> None:
        study = study_set(scores, on_degenerate)
        self.machine = machine
        self.items = study.items
        self.dropped_raters = study.dropped
        self.n_clinicians = len(study.clinicians)
        if not self.n_clinicians:
            raise ValueError(
                f"no clinician left after dropping {len(study.dropped)} with fewer than 2 "
                "items or constant composites"
            )
        y, _ = machine_vector(study, machine)
        rated = study.rated
        n_i = rated.sum(axis=1)
        self._x = study.x
        self._rated = rated
        self._n_safe = np.where(n_i > 0, n_i, 1.0)
        self._item_mean = np.nansum(study.x, axis=1) / self._n_safe  # 0 where nobody rated
        self._use = (~np.isnan(y) & (n_i > 0)).astype(np.float64)
        self._first_rater = np.argmax(rated > 0, axis=1)  # an item's clinicians share a set
        self._y = np.nan_to_num(y)
        # what the remembered fit and quantities are kept under (with the weights' own):
        # every machine of a report's row, its cell and its difference, refits the same
        # clinicians on the same resamples (one seed), and only what is read from the fit
        # depends on the machine; by fingerprint, as a fit is small and its weights are not
        self._clinicians_key = fingerprint(self._x)
        self._data_key = fingerprint(self._x, self._y, self._use)
        self._use_key = fingerprint(self._use)
        self.n_items = int(self._use.sum())
        # how many of the machine's items a kept clinician rated, on average: what decides
        # how well each clinician's offset is fitted (and whether the interval's coverage
        # was checked, agreement.analysis.settings)
        self.ratings_per_clinician = float((rated * self._use[:, None]).sum() / self.n_clinicians)
        if self.n_items < 2:
            raise ValueError(f"fewer than 2 study items scored by machine {machine!r}")
        self._last: tuple[np.ndarray, dict[str, np.ndarray]] | None = None
        # a cell whose own data give no value is refused here, naming why, rather than
        # reported as an ICC of nan
        if np.isnan(self.quantities(np.ones((1, len(self.items))))["icc"][0]):
            raise ValueError(self._why_undefined())

    def _why_undefined(self) -> str:
        """Why the full data give no fitted value, in the order _compute checks."""
        fit = fit_from_weights(self._x, np.ones((1, len(self.items))))
        if fit.df_error[0] < 1:
            return (
                "the clinicians' two-way fit has no error degrees of freedom: too few items "
                "rated by 2 or more clinicians once each clinician's offset is fitted"
            )
        if fit.df_items[0] < 1:
            return "the clinicians' two-way fit leaves no degrees of freedom for the item variance"
        if not fit.s2_error[0] > 0:
            return "the clinicians agree exactly once their offsets are fitted (no error variance)"
        if np.ptp(self._y[self._use > 0]) == 0:
            return f"machine {self.machine!r} gives every item the same composite"
        return (
            "fewer than 2 items in a connected set of clinicians (clinicians linked by items "
            "they both rated)"
        )

    def quantities(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        """Every quantity of FITTED_QUANTITIES for each row of ``weights``."""
        if self._last is None or self._last[0] is not weights:
            w = np.asarray(weights, dtype=np.float64)
            drawn = fingerprint(w)
            # a machine's cell and its difference read the same resamples (one seed)
            computed = remembered(
                "fitted_quantities",
                (self._data_key, drawn),
                operator.eq,
                lambda: self._compute(w, drawn),
                kept=CHUNKS_KEPT,
            )
            self._last = (weights, computed)
        return self._last[1]

    def _compute(self, w: np.ndarray, drawn: bytes) -> dict[str, np.ndarray]:
        fit = remembered(
            "clinicians_fit",
            (self._clinicians_key, drawn),
            operator.eq,
            lambda: fit_from_weights(self._x, w),
            kept=CHUNKS_KEPT,
        )
        side = remembered(
            "fitted_clinician_side",
            (self._clinicians_key, self._use_key, drawn),
            operator.eq,
            lambda: self._clinician_side(w, fit),
            kept=CHUNKS_KEPT,
        )
        u, comp = side.used, side.sets
        with np.errstate(divide="ignore", invalid="ignore"):
            y_c = self._y[None, :] - _group_means(u, self._y[None, :], comp)
            cov = (u * side.centred_means * y_c).sum(axis=1) / (side.used_n - side.n_sets)
            mean_y = (u @ self._y) / side.used_n
            var_y = (u * (self._y - mean_y[:, None]) ** 2).sum(axis=1) / (side.used_n - 1)
            total = fit.s2_item + fit.s2_error
            v = (fit.s2_item + fit.s2_error * side.mean_inverse_n) / total
            c = cov / np.sqrt(total * var_y)
            # cov and v come from different estimators, so c^2 > v (a correlation above 1)
            # can happen near perfect agreement: v is held to c^2, its bound, as a negative
            # variance estimate is held to 0 (the ICC is then at most 1)
            v = np.maximum(v, c * c)
            machine_icc = 4.0 * c / (v + 1.0 + 2.0 * c)
            alpha = 2.0 * c / (v + 1.0)
            clinicians = fit.s2_item / (fit.s2_item + fit.s2_error / STEP_UP_TO)
        ok = fit.valid & (side.used_n - side.n_sets >= 1) & (var_y > 0) & (total > 0)
        out = {
            "icc": machine_icc,
            "alpha_interval": alpha,
            "clinicians": clinicians,
            "difference": machine_icc - clinicians,
        }
        return {k: np.where(ok, val, np.nan) for k, val in out.items()}

    def _clinician_side(self, w: np.ndarray, fit: WeightedFit) -> _ClinicianSide:
        """What a resample's quantities read of the clinicians alone, the same for every
        machine scoring the same items (the machines of a report's row)."""
        # the offset-adjusted clinician mean of each item, per resample (B, n)
        r = self._item_mean[None, :] - (fit.offsets @ self._rated.T) / self._n_safe[None, :]
        u = w * self._use[None, :]
        big_n = u.sum(axis=1)
        comp, n_comp = self._components(w, fit)
        with np.errstate(divide="ignore", invalid="ignore"):
            # the offsets are identified within a connected set of clinicians only (a
            # resample often splits the sparse design): centre r (and y) within each set
            r_c = r - _group_means(u, r, comp)
            inv_n = (u @ (1.0 / self._n_safe)) / big_n
        return _ClinicianSide(u, comp, n_comp, r_c, big_n, inv_n)

    def _components(self, w: np.ndarray, fit: WeightedFit) -> tuple[np.ndarray, np.ndarray]:
        """Per resample, the connected set of clinicians (linked by an item both rated)
        each item belongs to (B, n), and the number of sets holding a used item (B,): the
        sets are the fit's (one search for all resamples)."""
        comp = fit.rater_set[:, self._first_rater]
        b, r = fit.rater_set.shape
        rows, cols = np.nonzero((w > 0) & (self._use > 0)[None, :])
        holds = np.zeros((b, r), dtype=bool)
        holds[rows, comp[rows, cols]] = True
        return comp, holds.sum(axis=1)


def _group_means(u: np.ndarray, v: np.ndarray, group: np.ndarray) -> np.ndarray:
    """The u-weighted mean of v (B, n) within each row's groups (B, n), at every item."""
    b, n = u.shape
    size = int(group.max()) + 1 if group.size else 1
    flat = (group + size * np.arange(b)[:, None]).ravel()
    vv = np.broadcast_to(v, (b, n))
    sums = np.bincount(flat, weights=(u * vv).ravel(), minlength=b * size)
    weights = np.bincount(flat, weights=u.ravel(), minlength=b * size)
    with np.errstate(divide="ignore", invalid="ignore"):
        means = sums / weights
    return np.nan_to_num(means)[flat].reshape(b, n)


class FittedMachineStatistic(ItemStatistic):
    """One quantity of :class:`FittedMachine` (a key of FITTED_QUANTITIES) as an
    :class:`ItemStatistic` over the study items; statistics built on one FittedMachine
    share its per-resample work."""

    def __init__(self, core: FittedMachine, quantity: str) -> None:
        if quantity not in FITTED_QUANTITIES:
            raise ValueError(
                f"quantity must be one of {sorted(FITTED_QUANTITIES)}, got {quantity!r}"
            )
        super().__init__(core.items)
        self.core = core
        self.quantity = quantity
        self.name = FITTED_QUANTITIES[quantity].format(machine=core.machine)

    def from_weights(self, weights: np.ndarray) -> np.ndarray:
        return self.core.quantities(weights)[self.quantity]


@dataclass(frozen=True)
class FittedMachineAgreement:
    """The machine against the clinicians with the clinicians' offsets fitted (point values)."""

    machine: object
    icc: float
    alpha_interval: float
    clinicians: float
    difference: float
    n_items: int
    n_clinicians: int
    dropped_raters: tuple[object, ...]
    ratings_per_clinician: float  # items of the machine's a kept clinician rated, on average
    form: str = "ICC(C,k), k=2 (= ICC(3,2)) of the clinicians' mean and the machine, clinician offsets fitted"


def machine_vs_clinicians_fitted(
    scores: pd.DataFrame, *, machine: object, on_degenerate: str = "raise"
) -> FittedMachineAgreement:
    """The point values of FITTED_QUANTITIES for one machine rater (see module docstring)."""
    core = FittedMachine(scores, machine=machine, on_degenerate=on_degenerate)
    values = core.quantities(np.ones((1, len(core.items))))
    return FittedMachineAgreement(
        machine=machine,
        **{k: float(v[0]) for k, v in values.items()},
        n_items=core.n_items,
        n_clinicians=core.n_clinicians,
        dropped_raters=core.dropped_raters,
        ratings_per_clinician=core.ratings_per_clinician,
    )


@dataclass(frozen=True)
class ClinicianAlphaTwoWay:
    """The clinicians' interval alpha with their offsets fitted: ICC(C,1) of the two-way
    model, s2_item / (s2_item + s2_e), with Wald's exact interval."""

    estimate: float
    ci_low: float
    ci_high: float


def clinician_alpha_twoway(
    scores: pd.DataFrame, *, on_degenerate: str = "raise", confidence: float = 0.95
) -> ClinicianAlphaTwoWay:
    """Interval alpha over the clinicians estimates, once each clinician's offset is removed,
    s2_item / (s2_item + s2_e): on an incomplete design it is taken from the two-way fit (the
    z-scores' offsets from a handful of items bias alpha down) with Wald's exact interval for
    ICC(C,1) (:func:`agreement.stats.icc_twoway_incomplete.icc_consistency_incomplete`)."""
    study = study_set(scores, on_degenerate)
    per_item = study.rated.sum(axis=1)
    if int((per_item >= 2).sum()) < 2:
        raise ValueError("fewer than 2 items rated by 2 or more clinicians")
    fit = icc_consistency_incomplete(study.x[per_item > 0], k=1.0, confidence=confidence)
    return ClinicianAlphaTwoWay(estimate=fit.icc, ci_low=fit.ci_low, ci_high=fit.ci_high)
