"""Which jury agrees best with the clinicians: the jury of every judge, each judge alone, and
each jury of all judges but one (leave one judge out), on all items.

With a single judge the jury *is* that judge: the report shows one column, named so, rather
than two identical ones. With two judges a jury without one is the other judge alone, so the
leave-one-out juries start at three judges. A leave-one-out jury is built the way the site
builds the jury (per item and criterion, the judges' weighted mean of their scores in the
table), from the judge rows of the table itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from agreement.analysis.cells import cell, machine_cell_steps
from agreement.analysis.settings import ROW_ALL, Settings
from agreement.analysis.steps import run_cells

SECTION = "jury_composition"
#: Fewest judges for which leaving one out gives a jury that is not a single judge.
MIN_JUDGES_FOR_LEAVE_ONE_OUT = 3


def judges_of(table: pd.DataFrame) -> list[str]:
    """The judges with scores in the table, sorted by name."""
    return sorted(map(str, table.loc[table["rater_kind"] == "judge", "rater"].unique()))


def jury_rater(table: pd.DataFrame) -> str | None:
    """The jury's rater label, or None when the table has no jury."""
    jury = table.loc[table["rater_kind"] == "jury", "rater"].unique()
    return str(jury[0]) if len(jury) else None


def single_judge(table: pd.DataFrame) -> str | None:
    """The one judge the jury is made of, or None (no jury, or several judges)."""
    judges = judges_of(table)
    return judges[0] if len(judges) == 1 and jury_rater(table) is not None else None


def without_label(judge: str) -> str:
    return f"jury without {judge}"


def jury_without(table: pd.DataFrame, judge: str, weights: Mapping[str, float]) -> pd.DataFrame:
    """Rows of kind "jury", rater "jury without <judge>": per item and criterion the weighted
    mean of the other judges' scores (weight 1 for a judge with no stated weight)."""
    others = table.loc[(table["rater_kind"] == "judge") & (table["rater"] != judge)].copy()
    others["w"] = [float(weights.get(r, 1.0)) for r in others["rater"]]
    others["wv"] = others["w"] * others["value"]
    keys = ["item", "criterion"]
    sums = others.groupby(keys, sort=True).agg(wv=("wv", "sum"), w=("w", "sum")).reset_index()
    attrs = others.drop_duplicates("item").set_index("item")
    extra = [c for c in table.columns if c not in (*keys, "rater", "rater_kind", "value")]
    out = sums.assign(rater=without_label(judge), rater_kind="jury", value=sums["wv"] / sums["w"])
    for col in extra:
        out[col] = attrs[col].reindex(out["item"]).to_numpy()
    return out.loc[:, list(table.columns)]


@dataclass(frozen=True)
class JuryCompositions:
    cells: list[dict[str, Any]]  # section SECTION: one cell per leave-one-out jury
    summary: dict[str, Any]  # judges, single_judge, compositions (see jury_compositions)


def leave_one_out_juries(
    table: pd.DataFrame, *, weights: Mapping[str, float], s: Settings
) -> dict[str, dict[str, Any]]:
    """Each leave-one-out jury's machine cell on all items (left-out judge -> the cell's
    fields), where the jury has judges enough: they need nothing of Table 2's row, so a report
    computes them beside it (agreement.analysis.comparison)."""
    judges = judges_of(table)
    if jury_rater(table) is None or len(judges) < MIN_JUDGES_FOR_LEAVE_ONE_OUT:
        return {}
    # one pass over the resamples for every jury: they share the clinicians' side
    steps = [
        machine_cell_steps(
            pd.concat([table, jury_without(table, j, weights)], ignore_index=True),
            without_label(j),
            s,
        )
        for j in judges
    ]
    return dict(zip(judges, run_cells(steps), strict=True))


def jury_compositions(
    table: pd.DataFrame,
    *,
    overall_cells: list[dict[str, Any]],
    weights: Mapping[str, float],
    s: Settings,
    leave_one_out: Mapping[str, dict[str, Any]] | None = None,
) -> JuryCompositions:
    """The compositions on all items, each with its ICC cell: the jury and each judge from
    ``overall_cells`` (Table 2's all-items row, not recomputed), each leave-one-out jury from
    ``leave_one_out`` (:func:`leave_one_out_juries`, computed here if not given).
    ``summary["compositions"]`` lists them, best ICC first among those with an estimate."""
    if leave_one_out is None:
        leave_one_out = leave_one_out_juries(table, weights=weights, s=s)
    judges = judges_of(table)
    jury = jury_rater(table)
    alone = single_judge(table)
    by_column = {c["column"]: c for c in overall_cells if c["row_group"] == "all"}
    compositions: list[dict[str, Any]] = []
    if jury is not None and jury in by_column:
        members = judges
        label = f"jury = {alone} alone" if alone else f"jury of all {len(judges)} judges"
        compositions.append(_entry("jury", label, jury, members, by_column[jury]))
    if alone is None:
        for j in judges:
            if j in by_column:
                compositions.append(_entry("judge", f"{j} alone", j, [j], by_column[j]))
    cells: list[dict[str, Any]] = []
    # leave_one_out_juries holds a jury per judge where the jury has judges enough, else none
    for j, fields in leave_one_out.items():
        rater = without_label(j)
        c = cell(
            section=SECTION,
            row_group="all",
            row=ROW_ALL,
            column_kind="jury",
            column=rater,
            **{
                # the fitted machine side names its own statistic (machine_cell)
                "statistic": overall_cells[0]["statistic"] if overall_cells else None,
                **fields,
            },
        )
        cells.append(c)
        others = [o for o in judges if o != j]
        compositions.append(_entry("leave_one_out", rater, rater, others, c))
    ranked = sorted(
        compositions,
        key=lambda e: (e["status"] != "ok" or e["estimate"] is None, -(e["estimate"] or 0.0)),
    )
    note = None
    if jury is not None and len(judges) == 2:
        note = "with two judges, the jury without one is the other judge alone (its own row)"
    return JuryCompositions(
        cells=cells,
        summary={
            "judges": judges,
            "jury": jury,
            "single_judge": alone,
            "weights": {j: float(weights.get(j, 1.0)) for j in judges},
            "compositions": ranked,
            "note": note,
        },
    )


def _entry(
    kind: str, label: str, rater: str, members: list[str], c: dict[str, Any]
) -> dict[str, Any]:
    keep = (
        "estimate",
        "ci_low",
        "ci_high",
        "alpha_interval",
        "alpha_ordinal",
        "n_items",
        "status",
        "reason",
    )
    return {
        "kind": kind,
        "composition": label,
        "rater": rater,
        "judges": members,
        **{k: c.get(k) for k in keep},
    }
