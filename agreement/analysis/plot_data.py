"""Per-item scores and what the report's plots need, computed once and stored with the
snapshot (so a reopened report draws the numbers it was computed with)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from agreement.stats import (
    MEDHELM_MIN_SHARED_ITEMS,
    EstimabilityRule,
    clinician_pairwise,
    composite_scores,
    machine_vs_clinicians,
)


def item_scores(table: pd.DataFrame) -> pd.DataFrame:
    """Per item: model, benchmark, category, clinician mean composite (raw scale) and how
    many clinicians, the jury composite (raw scale). Items with neither are left out."""
    comp = composite_scores(table)
    clin = (
        comp.loc[comp["rater_kind"] == "clinician"]
        .groupby("item")["composite"]
        .agg(clinician_mean="mean", n_clinicians="size")
    )
    jury = comp.loc[comp["rater_kind"] == "jury"].set_index("item")["composite"].rename("jury")
    attrs = table.drop_duplicates("item").set_index("item")[["model", "benchmark", "category"]]
    out = attrs.join(clin, how="left").join(jury, how="left")
    out = out.loc[out["clinician_mean"].notna() | out["jury"].notna()]
    out["n_clinicians"] = out["n_clinicians"].fillna(0).astype(int)
    return out.reset_index()


def plot_data(
    table: pd.DataFrame,
    *,
    min_shared_items: int = MEDHELM_MIN_SHARED_ITEMS,
    rule: EstimabilityRule | None = None,
) -> dict[str, Any]:
    """What the report's plots need, computed once and stored with the snapshot. With a
    ``rule``, every clinician pair carries ``excluded``: the rule's reason code for leaving it
    out of the mean (the heat map then shows no number for it), or None."""
    scores = item_scores(table)
    z = pd.DataFrame(columns=["item", "clinician_z", "machine_z"])
    z_note = None
    if (table["rater_kind"] == "jury").any():
        try:
            z = machine_vs_clinicians(table, machine="jury", on_degenerate="drop").table
        except ValueError as exc:  # the data allow no z-scores: the plot says why
            z_note = str(exc)
    else:
        z_note = "no jury scores"
    items = scores.merge(z[["item", "clinician_z", "machine_z"]], on="item", how="left")
    items = items.rename(columns={"machine_z": "jury_z"})
    pairs = pd.DataFrame(columns=["rater_a", "rater_b", "n_shared", "icc"])
    pairs_note = None
    clin = table.loc[table["rater_kind"] == "clinician"]
    if not clin.empty:
        try:
            pairs = clinician_pairwise(
                clin, min_shared_items=min_shared_items, on_degenerate="drop"
            ).pairs
        except ValueError as exc:  # no pair to show: the plot says why
            pairs_note = str(exc)
        else:
            if rule is not None:
                # As clinician_pairwise with the rule marks them; asked per pair so that the
                # plot keeps every pair even when the rule leaves out all of them.
                pairs["excluded"] = [rule.check_pair(n_shared=n) for n in pairs["n_shared"]]
    return {
        "items": items.to_dict("records"),
        "z_note": z_note,
        "clinicians": sorted(clin["rater"].unique().tolist()),
        "pairs": pairs.to_dict("records"),
        "pairs_note": pairs_note,
    }
