"""MedHELM step 4, machine vs clinicians: per item, two "raters" (the mean of the
clinicians' z-composites and the machine's z-score); ICC(3,k) = ICC(C,k) with k = 2 over
the study items the machine scored."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import sparse

from ..alpha_batch import EqualValues, equal_values, unsorted
from ..alpha_paired import OwnRanks, own_ranks, paired_ordinal_alpha
from ..bootstrap import ItemStatistic
from ..icc import icc
from ..icc_forms import IccTable
from ..shared import CHUNKS_KEPT, fingerprint, remembered
from .study_set import machine_vector, study_set, weighted_sd


@dataclass(frozen=True)
class MachineAgreement:
    """MedHELM machine-vs-clinicians agreement: ICC(3,2) = ICC(C,k), k = 2."""

    machine: object
    icc: float
    n_items: int
    n_clinicians: int
    dropped_raters: tuple[object, ...]
    icc_table: IccTable = field(repr=False)  # all forms, F test and F interval of the n x 2
    table: pd.DataFrame = field(repr=False, compare=False)  # item, clinician_z, machine_z, ...
    form: str = "ICC(C,k), k=2 (= ICC(3,2)); z-scores within rater (ddof=1)"


def machine_vs_clinicians(
    scores: pd.DataFrame, *, machine: object, on_degenerate: str = "raise"
) -> MachineAgreement:
    """MedHELM step 4 for one machine rater (a judge, the jury aggregate, or a metric)."""
    study = study_set(scores, on_degenerate)
    y, sd_m = machine_vector(study, machine)
    z_clin = study.x / study.sd  # NaN where not rated
    n_clin = study.rated.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        clin_mean = np.nansum(np.nan_to_num(z_clin), axis=1) / n_clin
    z_m = y / sd_m
    keep = ~np.isnan(y) & (n_clin > 0)
    table = pd.DataFrame(
        {
            "item": study.items[keep],
            "clinician_z": clin_mean[keep],
            "machine_z": z_m[keep],
            "n_clinicians": n_clin[keep].astype(int),
        }
    )
    if keep.sum() < 2:
        raise ValueError(f"fewer than 2 study items scored by machine {machine!r}")
    result = icc(table[["clinician_z", "machine_z"]].to_numpy())
    return MachineAgreement(
        machine=machine,
        icc=result.get("ICC(C,k)").icc,
        n_items=int(keep.sum()),
        n_clinicians=int((study.rated[keep].sum(axis=0) > 0).sum()),
        dropped_raters=study.dropped,
        icc_table=result,
        table=table,
    )


class MachineVsClinicianStatistic(ItemStatistic):
    """Step 4 as an :class:`ItemStatistic` over the study items (see module docstring)."""

    def __init__(
        self,
        scores: pd.DataFrame,
        *,
        machine: object,
        restandardize: bool = True,
        on_degenerate: str = "raise",
    ) -> None:
        study = study_set(scores, on_degenerate)
        super().__init__(study.items)
        self.name = f"ICC(3,2) {machine} vs clinicians"
        self.machine = machine
        self.restandardize = restandardize
        self._study = study
        y, self._sd_m = machine_vector(study, machine)
        self._has_m = (~np.isnan(y)).astype(np.float64)
        self._y0 = np.nan_to_num(y)
        # the machine's distinct composites, ascending, and each item's (0 where none: such an
        # item has no weight): its z-scores are these levels under one increasing affine map
        self._y_levels = np.unique(self._y0[self._has_m > 0])
        self._y_level = np.minimum(
            np.searchsorted(self._y_levels, self._y0), max(self._y_levels.size - 1, 0)
        )
        self._has_m_key = fingerprint(self._has_m)
        self._x0 = np.nan_to_num(study.x)
        self._rated = study.rated
        self._sparse_rated = sparse.csr_matrix(study.rated)
        self._sparse_x0 = sparse.csr_matrix(self._x0)
        self._clinicians_key = fingerprint(
            self._x0, self._rated, study.sd, np.array([restandardize])
        )
        self.agreement = machine_vs_clinicians(scores, machine=machine, on_degenerate=on_degenerate)
        self._direct = self.agreement.icc
        self._cached: tuple[np.ndarray, _Columns] | None = None

    def estimate(self) -> float:
        return self._direct

    def from_weights(self, weights: np.ndarray) -> np.ndarray:
        use, c, z = self.columns(weights)
        return consistency_icc2(use, c + z, c - z)

    def columns(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(use, c, z), each (B, n), for item weights (B, n): the weight an item has in the
        resample (0 where the machine or every clinician z-score is missing), the clinicians'
        mean z-score and the machine's z-score. The last weights array's columns are kept, so
        statistics read from the same resamples (ICC, alpha) compute them once."""
        return self._columns_of(weights).values

    def paired_ordinal_alpha(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(alpha, computed), each (B,): the ordinal alpha of the (c, z) table of each resample
        where :func:`agreement.stats.alpha_paired.paired_ordinal_alpha` computes it without
        ranking the pooled values (``computed``; elsewhere NaN, for the caller to rank). The
        clinicians' means are ranked once per resample chunk for every machine of the row."""
        cols = self._columns_of(weights)
        use, c, _ = cols.values
        if self._y_levels.size == 0:  # the machine scored none of the items
            return np.full(use.shape[0], np.nan), np.zeros(use.shape[0], dtype=bool)
        ranks: OwnRanks = remembered(
            "clinician_ranks",
            (self._clinicians_key, cols.weights_key, self._has_m_key),
            operator.eq,
            lambda: own_ranks(c, use),
            kept=CHUNKS_KEPT,
        )
        mean_m, sd_m = cols.machine_mean[:, None], cols.machine_sd[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            # the very arithmetic of the z-scores in _columns, so a level equals its items' z
            levels = (self._y_levels[None, :] - mean_m) / sd_m
            # searched in the clinicians' means' sorted order: ascending keys search fast
            threshold = np.nan_to_num(mean_m + sd_m * ranks.sorted_values)
            hint = unsorted(np.searchsorted(self._y_levels, threshold), ranks.positions)
        return paired_ordinal_alpha(c, ranks, levels, self._y_level, use, hint)

    def _columns_of(self, weights: np.ndarray) -> _Columns:
        if self._cached is not None and self._cached[0] is weights:
            return self._cached[1]
        out = self._columns(weights)
        self._cached = (weights, out)
        return out

    def equal_columns(self) -> EqualValues:
        """The groups of the columns (c_1, z_1, c_2, z_2, ...) that :meth:`columns` gives equal
        values in every resample wherever they have weight: the clinicians' means of items
        whose clinicians and composites are the same (the same sums in the same order), the
        machine's z-scores of equal composites."""
        n, r = self._x0.shape
        keys = np.zeros((n, 2, 1 + 2 * r))
        keys[:, 0, 1:] = np.hstack([self._x0, self._rated])
        keys[:, 1, 0] = 1.0
        keys[:, 1, 1] = self._y0
        return equal_values(keys.reshape(2 * n, -1))

    def _columns(self, weights: np.ndarray) -> _Columns:
        w = np.asarray(weights, dtype=np.float64)
        b = w.shape[0]
        weights_key = fingerprint(w)
        c, rated = remembered(
            "clinician_means",
            (self._clinicians_key, weights_key),
            operator.eq,
            lambda: self._clinician_means(w),
            kept=CHUNKS_KEPT,
        )
        if self.restandardize:
            mean_m, sd_m = weighted_sd(w, self._has_m[:, None], self._y0[:, None])
            mean_m, sd_m = mean_m[:, 0], sd_m[:, 0]
        else:
            mean_m = np.zeros(b)
            sd_m = np.full(b, self._sd_m)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (self._y0[None, :] - mean_m[:, None]) / sd_m[:, None]
        use = w * self._has_m[None, :] * rated
        z = np.where(use > 0, z, 0.0)
        return _Columns((use, c, z), weights_key, mean_m, sd_m)

    def _clinician_means(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(c, rated), each (B, n): the clinicians' mean z-score of each item and whether it
        has one (a clinician with a z-score rated it). The clinicians' alone: inside
        :func:`agreement.stats.shared.shared_work` every machine of a report's row reads the
        same, as they draw the same resamples of the same clinicians."""
        if self.restandardize:
            mean_c, sd_c = weighted_sd(w, self._rated, self._x0)
        else:
            mean_c = np.zeros((w.shape[0], len(self._study.clinicians)))
            sd_c = np.broadcast_to(self._study.sd, mean_c.shape)
        ok = np.isfinite(sd_c) & (sd_c > 0)
        inv = np.where(ok, 1.0 / np.where(ok, sd_c, 1.0), 0.0)  # (B, R)
        # Clinician mean z per item: sum_r A_ir ok_br (x_ir - m_br) / sd_br / sum_r A_ir ok_br
        num = (self._sparse_x0 @ inv.T - self._sparse_rated @ (np.nan_to_num(mean_c) * inv).T).T
        den = (self._sparse_rated @ ok.T.astype(np.float64)).T  # (B, n)
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(den > 0, num / den, 0.0)
        return c, den > 0


@dataclass(frozen=True)
class _Columns:
    """A resample chunk's columns and what made the machine's: its mean and SD per resample."""

    values: tuple[np.ndarray, np.ndarray, np.ndarray]  # use, c, z
    weights_key: bytes
    machine_mean: np.ndarray  # (B,)
    machine_sd: np.ndarray  # (B,)


def consistency_icc2(w: np.ndarray, a: np.ndarray, d: np.ndarray) -> np.ndarray:
    """ICC(C,2) = 1 - Var_w(u - v) / Var_w(u + v) for two columns u, v, with a = u + v,
    d = u - v and item weights w (B, n): for k = 2, MSR = SS(a)/2/(N-1), MSE = SS(d)/2/(N-1)
    so (MSR - MSE)/MSR = 1 - SS(d)/SS(a). NaN with fewer than 2 distinct items."""
    big_n = w.sum(axis=1)
    distinct = np.count_nonzero(w > 0, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        sa = (w * a).sum(axis=1)
        sd = (w * d).sum(axis=1)
        ssa = (w * a * a).sum(axis=1) - sa * sa / big_n
        ssd = (w * d * d).sum(axis=1) - sd * sd / big_n
        out = 1.0 - ssd / ssa
    return np.where((distinct >= 2) & (ssa > 0), out, np.nan)
