"""The study set both MedHELM statistics share: the items rated by at least one clinician,
the clinicians' centred composites on them, and every machine rater's composites there.

Every rater is standardised over its own items within this set, so a machine that also
scored thousands of benchmark items is put on the clinicians' item sample, and the
clinician z-scores are the same in the machine and the clinician-clinician analyses (which
makes their difference meaningful)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..common import MACHINE_KINDS, examples
from ..shared import remembered
from .composite import composite_scores, zscore_within_rater


@dataclass(frozen=True)
class StudySet:
    items: pd.Index  # study items (rated by >= 1 clinician), sorted
    clinicians: pd.Index
    x: np.ndarray  # (n, R) clinician composites centred on the rater's mean; NaN = not rated
    rated: np.ndarray  # (n, R) float 0/1
    sd: np.ndarray  # (R,) full-data SD (ddof = 1)
    dropped: tuple[object, ...]
    composites: pd.DataFrame  # composites restricted to the study items (all rater kinds)


def study_set(scores: pd.DataFrame, on_degenerate: str) -> StudySet:
    """The study set of ``scores`` (see module docstring); inside
    :func:`agreement.stats.shared.shared_work` built once per table object (a third of the
    cells' time went on building it again for each statistic of a cell)."""
    return remembered(
        "study_set",
        (scores, on_degenerate),
        lambda a, b: a[0] is b[0] and a[1] == b[1],
        lambda: _study_set(scores, on_degenerate),
        kept=4,
    )


def _study_set(scores: pd.DataFrame, on_degenerate: str) -> StudySet:
    comp = composite_scores(scores)
    clin = comp.loc[comp["rater_kind"] == "clinician"]
    if clin.empty:
        raise ValueError("the score table has no clinician ratings")
    items = pd.Index(np.sort(clin["item"].unique()), name="item")
    comp = comp.loc[comp["item"].isin(items)].reset_index(drop=True)
    clin = comp.loc[comp["rater_kind"] == "clinician"]
    z = zscore_within_rater(clin, on_degenerate=on_degenerate)
    dropped = z.attrs["dropped_raters"]
    clinicians = pd.Index(np.sort(z["rater"].unique()), name="rater")
    wide = z.pivot(index="item", columns="rater", values="composite").reindex(
        index=items, columns=clinicians
    )
    x = wide.to_numpy(dtype=np.float64)
    mean = np.nanmean(x, axis=0)
    sd = np.nanstd(x, axis=0, ddof=1)
    return StudySet(
        items=items,
        clinicians=clinicians,
        x=x - mean,
        rated=(~np.isnan(x)).astype(np.float64),
        sd=sd,
        dropped=dropped,
        composites=comp,
    )


def machine_vector(study: StudySet, machine: object) -> tuple[np.ndarray, float]:
    comp = study.composites
    rows = comp.loc[comp["rater"] == machine]
    if rows.empty:
        all_raters = comp["rater"].unique().tolist()
        raise ValueError(
            f"machine rater {machine!r} has no scores on the clinician-rated items "
            f"(raters there: {examples(all_raters)})"
        )
    kind = rows["rater_kind"].iloc[0]
    if kind not in MACHINE_KINDS:
        raise ValueError(
            f"rater {machine!r} has rater_kind {kind!r}, not a machine kind {sorted(MACHINE_KINDS)}"
        )
    y = rows.set_index("item")["composite"].reindex(study.items).to_numpy(dtype=np.float64)
    sd = float(np.nanstd(y, ddof=1)) if np.count_nonzero(~np.isnan(y)) >= 2 else float("nan")
    if not sd > 0:
        raise ValueError(
            f"machine rater {machine!r} has fewer than 2 study items or constant composites; "
            "its z-scores are undefined"
        )
    return y - np.nanmean(y), sd


def weighted_sd(
    weights: np.ndarray, rated: np.ndarray, x0: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per-rater weighted mean and SD (ddof = 1, frequency weights) for each resample.

    weights (B, n); rated (n, R) 0/1; x0 (n, R) values with NaN replaced by 0.
    Returns (mean, sd), each (B, R); sd is NaN where fewer than 2 draws or constant."""
    cnt = weights @ rated
    s1 = weights @ x0
    s2 = weights @ (x0 * x0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = s1 / cnt
        var = (s2 - s1 * mean) / (cnt - 1)
        # Relative guard: a variance at rounding level of the raw second moment is zero.
        var = np.where(var > 1e-12 * np.maximum(s2 / cnt, 1e-300), var, np.nan)
    return mean, np.sqrt(var)
