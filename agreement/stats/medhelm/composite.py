"""MedHELM steps 1-3: the composite per rater and item (mean over criteria), and z-scores
within rater (sample SD, ddof = 1)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..common import RATER_KINDS, SCORE_COLUMNS, examples, require_columns

DEGENERATE_POLICIES: tuple[str, ...] = ("raise", "drop")


def composite_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """Composite per rater and item: the mean over criteria (step 1).

    Returns columns ``item, rater, rater_kind, composite, n_criteria`` sorted by rater, item.
    Rows with a missing value are skipped. Raises ValueError on missing columns, unknown
    rater kinds, a rater with more than one kind, or duplicate (item, criterion, rater) rows.
    """
    require_columns(scores, SCORE_COLUMNS, what="score table")
    df = scores.loc[:, list(SCORE_COLUMNS)].copy()
    try:
        df["value"] = pd.to_numeric(df["value"], errors="raise").astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"column 'value' must be numeric: {exc}") from exc
    kinds = set(df["rater_kind"].unique())
    unknown = kinds - RATER_KINDS
    if unknown:
        raise ValueError(
            f"unknown rater_kind value(s) {sorted(map(str, unknown))}; "
            f"expected {sorted(RATER_KINDS)}"
        )
    n_kinds = df.groupby("rater", sort=False)["rater_kind"].nunique()
    if (n_kinds > 1).any():
        raise ValueError(
            f"rater(s) with more than one rater_kind: {examples(n_kinds.index[n_kinds > 1])}"
        )
    dup = df.duplicated(["item", "criterion", "rater"], keep=False)
    if dup.any():
        bad = df.loc[dup, ["item", "criterion", "rater"]].drop_duplicates()
        raise ValueError(
            f"{len(bad)} duplicate (item, criterion, rater) row(s), e.g. "
            f"{examples(list(bad.itertuples(index=False, name=None)))}"
        )
    df = df.loc[df["value"].notna()]
    out = (
        df.groupby(["rater", "item"], sort=True)
        .agg(
            rater_kind=("rater_kind", "first"),
            composite=("value", "mean"),
            n_criteria=("value", "size"),
        )
        .reset_index()
    )
    return out.loc[:, ["item", "rater", "rater_kind", "composite", "n_criteria"]]


def zscore_within_rater(composites: pd.DataFrame, *, on_degenerate: str = "raise") -> pd.DataFrame:
    """Add column ``z`` = (composite - rater mean) / rater SD, SD with ddof = 1 (step 3).

    ``composites`` has at least columns ``rater`` and ``composite``. A rater with fewer than
    2 composites or constant composites has no usable SD: ``on_degenerate="raise"`` (default)
    raises ValueError naming them; ``"drop"`` removes their rows. The rows dropped are listed
    in ``out.attrs["dropped_raters"]``.
    """
    if on_degenerate not in DEGENERATE_POLICIES:
        raise ValueError(f"on_degenerate must be one of {DEGENERATE_POLICIES}")
    require_columns(composites, ("rater", "composite"), what="composite table")
    g = composites.groupby("rater", sort=True)["composite"]
    mean = g.transform("mean")
    sd = g.transform("std")  # pandas' groupby std is the sample SD (ddof = 1)
    bad_mask = ~(sd > 0)  # also catches NaN: a rater with a single item
    bad = sorted(composites.loc[bad_mask, "rater"].unique().tolist(), key=str)
    if bad and on_degenerate == "raise":
        raise ValueError(
            f"rater(s) {examples(bad)} have fewer than 2 items or constant composite scores, "
            "so their z-scores are undefined; remove them or pass on_degenerate='drop'"
        )
    out = composites.loc[~bad_mask].copy()
    out["z"] = (out["composite"] - mean[~bad_mask]) / sd[~bad_mask]
    out.attrs["dropped_raters"] = tuple(bad)
    return out
