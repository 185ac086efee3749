"""Krippendorff's alpha (interval and ordinal) beside MedHELM's ICCs, on the same values.

- Machine vs clinicians: the same n x 2 table as the ICC(3,2) (per item, the clinicians'
  mean z-composite and the machine's z-score), alpha over its two "raters".
- Clinician vs clinician: every clinician's z-composites on the study items in one alpha
  (items as units, any number of clinicians per item), where the ICC is a mean over pairs:
  alpha takes an incomplete design as it is.

Both are :class:`ItemStatistic` over the study items, so they are bootstrapped on the very
resamples of the ICC beside them (z-scores recomputed per resample, as for the ICC).
Ordinal alpha uses the order of the z-scores only (the pooled values' mid-ranks).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from ..alpha import krippendorff_alpha
from ..alpha_batch import equal_values, weighted_alphas
from ..bootstrap import ItemStatistic
from .machine import MachineVsClinicianStatistic
from .study_set import StudySet, study_set, weighted_sd

ALPHA_LEVELS: tuple[str, ...] = ("interval", "ordinal")


def _check_level(level: str) -> None:
    if level not in ALPHA_LEVELS:
        raise ValueError(f"level must be one of {ALPHA_LEVELS}, got {level!r}")


class _SharedLevels:
    """The alphas at ``levels`` of the last weights array (the ICC's columns are cached the
    same way), so the interval and ordinal statistics share one pass per resample chunk."""

    def __init__(self, levels: tuple[str, ...] = ALPHA_LEVELS) -> None:
        for level in levels:
            _check_level(level)
        self.levels = levels
        self._last: tuple[np.ndarray, dict[str, np.ndarray]] | None = None

    def get(self, weights: np.ndarray, compute: Callable[[], dict[str, np.ndarray]]) -> dict:
        if self._last is None or self._last[0] is not weights:
            self._last = (weights, compute())
        return self._last[1]


class MachineAlphaStatistic(ItemStatistic):
    """Alpha of the machine-vs-clinicians table, read from the ICC statistic's columns (one
    computation of the z-scores per resample for the ICC and both alphas)."""

    def __init__(
        self, base: MachineVsClinicianStatistic, *, level: str, shared: _SharedLevels | None = None
    ) -> None:
        _check_level(level)
        super().__init__(base.items)
        self.base = base
        self.level = level
        self.name = f"Krippendorff's alpha ({level}) {base.machine} vs clinicians"
        self._unit = np.repeat(np.arange(base.n_items), 2)  # (c_i, z_i) side by side
        self._shared = shared if shared is not None else _SharedLevels()
        if level not in self._shared.levels:
            raise ValueError(f"the shared levels {self._shared.levels} do not include {level!r}")
        self._groups = base.equal_columns()

    def estimate(self) -> float:
        t = self.base.agreement.table
        long = pd.DataFrame(
            {
                "item": np.concatenate([t["item"].to_numpy(), t["item"].to_numpy()]),
                "rater": ["clinicians"] * len(t) + ["machine"] * len(t),
                "value": np.concatenate([t["clinician_z"], t["machine_z"]]),
            }
        )
        return krippendorff_alpha(long, level=self.level).alpha

    def from_weights(self, weights: np.ndarray) -> np.ndarray:
        return self._shared.get(weights, lambda: self._alphas(weights))[self.level]

    def _alphas(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        """The alphas at the shared levels; the ordinal one from the paired ranks
        (:meth:`MachineVsClinicianStatistic.paired_ordinal_alpha`) wherever they apply, from
        the pooled values' ranks in the other resamples."""
        use, c, z = self.base.columns(weights)
        pooled = tuple(lv for lv in self._shared.levels if lv != "ordinal")
        out = self._pooled(use, c, z, pooled) if pooled else {}
        if "ordinal" in self._shared.levels:
            ordinal, computed = self.base.paired_ordinal_alpha(weights)
            rest = ~computed
            if rest.any():
                ordinal[rest] = self._pooled(use[rest], c[rest], z[rest], ("ordinal",))["ordinal"]
            out["ordinal"] = ordinal
        return out

    def _pooled(
        self, use: np.ndarray, c: np.ndarray, z: np.ndarray, levels: tuple[str, ...]
    ) -> dict[str, np.ndarray]:
        b = use.shape[0]
        values = np.stack([c, z], axis=2).reshape(b, -1)
        present = np.repeat(use > 0, 2, axis=1)
        return weighted_alphas(values, present, self._unit, use, levels=levels, groups=self._groups)


def machine_alpha_statistics(
    base: MachineVsClinicianStatistic, *, levels: tuple[str, ...] = ALPHA_LEVELS
) -> list[MachineAlphaStatistic]:
    """One statistic per level of ``levels``, sharing their per-resample work."""
    shared = _SharedLevels(levels)
    return [MachineAlphaStatistic(base, level=lv, shared=shared) for lv in levels]


class ClinicianAlphaStatistic(ItemStatistic):
    """Alpha over every clinician's z-composites on the study items (see module docstring);
    :func:`clinician_alpha_statistics` builds both levels from a score table."""

    def __init__(
        self,
        study: StudySet,
        *,
        level: str,
        restandardize: bool = True,
        shared: _SharedLevels | None = None,
    ) -> None:
        _check_level(level)
        self._shared = shared if shared is not None else _SharedLevels()
        super().__init__(study.items)
        self.level = level
        self.restandardize = restandardize
        self.name = f"Krippendorff's alpha ({level}) clinician vs clinician"
        self._study = study
        self._rows, self._cols = np.nonzero(study.rated > 0)  # row-major: sorted by item
        self._x0 = np.nan_to_num(study.x)
        self._xv = self._x0[self._rows, self._cols]
        # a clinician's equal composites have equal z-scores in every resample
        self._groups = equal_values(np.column_stack([self._cols, self._xv]))
        self.n_clinicians = len(study.clinicians)
        self.dropped_raters = study.dropped

    def estimate(self) -> float:
        z = self._xv / self._study.sd[self._cols]
        long = pd.DataFrame({"item": self._rows, "rater": self._cols, "value": z})
        return krippendorff_alpha(long, level=self.level).alpha

    def from_weights(self, weights: np.ndarray) -> np.ndarray:
        return self._shared.get(weights, lambda: self._alphas(weights))[self.level]

    def _alphas(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        w = np.asarray(weights, dtype=np.float64)
        if self.restandardize:
            mean, sd = weighted_sd(w, self._study.rated, self._x0)
        else:
            mean = np.zeros((w.shape[0], self.n_clinicians))
            sd = np.broadcast_to(self._study.sd, mean.shape)
        ok = np.isfinite(sd) & (sd > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (self._xv[None, :] - mean[:, self._cols]) / sd[:, self._cols]
        present = ok[:, self._cols]
        z = np.where(present, z, 0.0)
        return weighted_alphas(
            z, present, self._rows, w, levels=self._shared.levels, groups=self._groups
        )


def clinician_alpha_statistics(
    scores: pd.DataFrame, *, restandardize: bool = True, on_degenerate: str = "raise"
) -> list[ClinicianAlphaStatistic]:
    """One statistic per level of ALPHA_LEVELS, sharing their per-resample work."""
    study = study_set(scores, on_degenerate)
    shared = _SharedLevels()
    return [
        ClinicianAlphaStatistic(study, level=lv, restandardize=restandardize, shared=shared)
        for lv in ALPHA_LEVELS
    ]
