"""Clinician-clinician agreement on an incomplete design (each item rated by some of the
clinicians; chosen by :mod:`.form_choice`): the one-way random-effects ICC on the same
within-rater z-scored composites as MedHELM's pair mean.

z-scoring removes each clinician's mean, so what is left between the ratings of an item is
error: the one-way ICC(1) (:func:`agreement.stats.icc_oneway.icc_oneway_unbalanced`, k0 for
unequal numbers of ratings per item) estimates s2_item / (s2_item + s2_error) of the z-scores,
and Spearman-Brown steps it up to two ratings, ICC(1,2) = 2 ICC(1) / (1 + ICC(1)): the
population value of MedHELM's ICC(3,2) of a pair, so the column means the same in every
design. Interval: the one-way F interval for ICC(1) (k0 in place of k), mapped the same way
(Spearman-Brown is increasing)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..bootstrap import ItemStatistic
from ..icc_oneway import OneWayIcc, icc_oneway_unbalanced
from .study_set import StudySet, study_set, weighted_sd

#: MedHELM's ICC(3,2) is of two ratings: the one-way ICC is stepped up to as many.
STEP_UP_TO = 2


def spearman_brown(rho: float | np.ndarray, k: float = STEP_UP_TO) -> float | np.ndarray:
    """Reliability of the mean of k ratings from the single-rating ICC."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return k * rho / (1.0 + (k - 1.0) * rho)


@dataclass(frozen=True)
class OneWayClinicianAgreement:
    """One-way ICC(1,2) of the clinicians' z-scores, with its F interval."""

    icc: float  # ICC(1,2) by Spearman-Brown from ICC(1)
    ci_low: float
    ci_high: float
    icc_single: float  # ICC(1)
    n_items: int  # study items (rated by a clinician)
    n_items_multiple: int  # items rated by 2 or more clinicians
    n_clinicians: int
    k0: float
    dropped_raters: tuple[object, ...]
    oneway: OneWayIcc


def _z_long(study: StudySet) -> pd.DataFrame:
    z = study.x / study.sd
    ii, jj = np.nonzero(study.rated > 0)
    return pd.DataFrame(
        {"item": study.items[ii], "rater": study.clinicians[jj], "value": z[ii, jj]}
    )


def clinician_oneway(
    scores: pd.DataFrame, *, on_degenerate: str = "raise", confidence: float = 0.95
) -> OneWayClinicianAgreement:
    """The one-way clinician-clinician ICC(1,2) of ``scores`` (clinician rows are used)."""
    study = study_set(scores, on_degenerate)
    per_item = study.rated.sum(axis=1)
    if int((per_item >= 2).sum()) < 2:
        raise ValueError("fewer than 2 items rated by 2 or more clinicians")
    one = icc_oneway_unbalanced(_z_long(study), confidence=confidence)
    return OneWayClinicianAgreement(
        icc=float(spearman_brown(one.icc)),
        ci_low=float(spearman_brown(one.ci_low)),
        ci_high=float(spearman_brown(one.ci_high)),
        icc_single=one.icc,
        n_items=len(study.items),
        n_items_multiple=int((per_item >= 2).sum()),
        n_clinicians=len(study.clinicians),
        k0=one.k0,
        dropped_raters=study.dropped,
        oneway=one,
    )


class ClinicianOneWayStatistic(ItemStatistic):
    """:func:`clinician_oneway`'s ICC(1,2) as an :class:`ItemStatistic` over the study items,
    the z-scores recomputed per resample (each clinician's weighted mean and SD), for the
    difference with a machine's ICC on the same resamples."""

    def __init__(self, scores: pd.DataFrame, *, on_degenerate: str = "raise") -> None:
        self._direct = clinician_oneway(scores, on_degenerate=on_degenerate).icc
        study = study_set(scores, on_degenerate)
        super().__init__(study.items)
        self.name = "one-way ICC(1,2) clinician vs clinician"
        self._rated = study.rated
        self._x0 = np.nan_to_num(study.x)
        self._n_i = study.rated.sum(axis=1)

    def estimate(self) -> float:
        return self._direct

    def from_weights(self, weights: np.ndarray) -> np.ndarray:
        w = np.asarray(weights, dtype=np.float64)
        mean, sd = weighted_sd(w, self._rated, self._x0)  # (B, R)
        ok = np.isfinite(sd).all(axis=1)
        inv = np.where(np.isfinite(sd), 1.0 / np.where(np.isfinite(sd), sd, 1.0), 0.0)
        mean = np.nan_to_num(mean)
        x0, rated = self._x0, self._rated
        s = (x0 @ inv.T - rated @ (mean * inv).T).T  # (B, n): item sums of z
        q = ((x0 * x0) @ (inv * inv).T - 2 * x0 @ (mean * inv * inv).T).T
        q = q + (rated @ (mean * mean * inv * inv).T).T  # item sums of z^2
        n_i = self._n_i
        with np.errstate(divide="ignore", invalid="ignore"):
            s2n = (w * s * s / n_i).sum(axis=1)
            big_n = w @ n_i
            groups = w.sum(axis=1)
            ssb = s2n - (w * s).sum(axis=1) ** 2 / big_n
            ssw = (w * q).sum(axis=1) - s2n
            msb, msw = ssb / (groups - 1), ssw / (big_n - groups)
            k0 = (big_n - (w @ (n_i * n_i)) / big_n) / (groups - 1)
            rho = (msb - msw) / (msb + (k0 - 1) * msw)
            out = spearman_brown(rho)
        return np.where(ok & (big_n > groups) & (msb > 0), out, np.nan)
