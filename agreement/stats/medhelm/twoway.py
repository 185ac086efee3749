"""Clinician-clinician agreement on an incomplete design (each item rated by some of the
clinicians; chosen by :mod:`.form_choice`): ICC(C,2) of the two-way model on the clinicians'
composites, the rater offsets fitted jointly with the items
(:func:`agreement.stats.icc_twoway_incomplete.icc_consistency_incomplete`: Henderson III
estimate, Wald's exact interval).

Estimand: s2_item / (s2_item + s2_e / 2) of the composites, each clinician's mean level
removed (fitted, not estimated from the clinician's own items alone): the reliability of the
mean of two clinicians' ratings of an item after their offsets, the population value of
MedHELM's ICC(3,2) of a pair whenever the clinicians use the same scale width (z-scoring then
only removes the offsets). It differs from the z-scored forms where clinicians differ in
spread: z-scores rescale each clinician to SD 1, this form does not (a clinician who uses a
wider range adds to s2_e). Why not z-scores: each clinician's SD and mean from a dozen items
(2 of 29 clinicians per item on 200 items) bias the one-way ICC down; the fitted offsets do
not (bench/README.md, "Issue 21: the clinician-clinician interval on sparse designs").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..bootstrap import ItemStatistic
from ..icc_twoway_incomplete import (
    TwoWayConsistency,
    icc_consistency_from_weights,
    icc_consistency_incomplete,
)
from .study_set import study_set

#: MedHELM's ICC(3,2) is of two ratings.
STEP_UP_TO = 2


@dataclass(frozen=True)
class TwoWayClinicianAgreement:
    """ICC(C,2) of the clinicians' composites, rater offsets fitted, with Wald's interval."""

    icc: float
    ci_low: float
    ci_high: float
    n_items: int  # study items (rated by a clinician)
    n_items_multiple: int  # items rated by 2 or more clinicians
    n_clinicians: int
    dropped_raters: tuple[object, ...]
    fit: TwoWayConsistency


def clinician_twoway(
    scores: pd.DataFrame, *, on_degenerate: str = "raise", confidence: float = 0.95
) -> TwoWayClinicianAgreement:
    """The two-way clinician-clinician ICC(C,2) of ``scores`` (clinician rows are used; the
    clinicians left out are the z-scored forms' ones, so every form sees the same raters)."""
    study = study_set(scores, on_degenerate)
    per_item = study.rated.sum(axis=1)
    if int((per_item >= 2).sum()) < 2:
        raise ValueError("fewer than 2 items rated by 2 or more clinicians")
    # an item whose only clinician was left out (no variation) has no rating left
    fit = icc_consistency_incomplete(study.x[per_item > 0], k=STEP_UP_TO, confidence=confidence)
    return TwoWayClinicianAgreement(
        icc=fit.icc,
        ci_low=fit.ci_low,
        ci_high=fit.ci_high,
        n_items=len(study.items),
        n_items_multiple=int((per_item >= 2).sum()),
        n_clinicians=len(study.clinicians),
        dropped_raters=study.dropped,
        fit=fit,
    )


class ClinicianTwoWayStatistic(ItemStatistic):
    """:func:`clinician_twoway`'s ICC(C,2) as an :class:`ItemStatistic` over the study items,
    for the difference with a machine's ICC on the same item resamples."""

    def __init__(self, scores: pd.DataFrame, *, on_degenerate: str = "raise") -> None:
        study = study_set(scores, on_degenerate)
        super().__init__(study.items)
        self.name = "two-way ICC(C,2) clinician vs clinician"
        self._x = study.x
        self._direct = icc_consistency_incomplete(
            study.x[study.rated.sum(axis=1) > 0], k=STEP_UP_TO
        ).icc

    def estimate(self) -> float:
        return self._direct

    def from_weights(self, weights: np.ndarray) -> np.ndarray:
        return icc_consistency_from_weights(self._x, weights, k=STEP_UP_TO)
