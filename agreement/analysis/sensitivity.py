"""The headline figures with and without the estimability rule: a report's sensitivity line.

With the rule: the all-items cells and differences as the report shows them. Without it:
MedHELM as published, every clinician pair sharing >= 2 items and every value, whatever its
bounds, interval or shared items. Point estimates only: the line says how much the rule
moves the headline, the intervals are in the table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from agreement.analysis.cells import only_clinicians_and
from agreement.analysis.settings import CLINICIAN_COLUMN, ROW_ALL
from agreement.stats import MEDHELM_MIN_SHARED_ITEMS, clinician_pairwise, machine_vs_clinicians
from agreement.stats.estimability import number

SENSITIVITY_COLUMNS = [
    "figure",
    "kind",  # "icc" or "difference"
    "column_kind",
    "column",
    "with_rule",
    "with_rule_status",
    "with_rule_reason",
    "n_pairs_excluded",
    "without_rule",
    "without_rule_reason",
]
WITHOUT_RULE = (
    f"MedHELM as published: every clinician pair sharing >= {MEDHELM_MIN_SHARED_ITEMS} items, "
    "every value"
)


@dataclass(frozen=True)
class Sensitivity:
    entries: list[dict[str, Any]]  # SENSITIVITY_COLUMNS, cells first, then differences
    line: str


def _unruled(cell: dict[str, Any], sub: pd.DataFrame) -> tuple[float | None, str | None]:
    """The cell's point estimate as MedHELM publishes it, or (None, why there is none)."""
    if cell["status"] == "insufficient":  # no estimate with or without the rule
        return None, cell["reason"]
    try:
        if cell["column"] == CLINICIAN_COLUMN:
            clin = sub.loc[sub["rater_kind"] == "clinician"]
            value = clinician_pairwise(
                clin, min_shared_items=MEDHELM_MIN_SHARED_ITEMS, on_degenerate="drop"
            ).mean_icc
        else:
            machine = cell["column"]
            value = machine_vs_clinicians(
                only_clinicians_and(sub, machine), machine=machine, on_degenerate="drop"
            ).icc
    except ValueError as exc:  # the data allow no estimate
        return None, str(exc)
    return value, None


def _entry(figure: str, kind: str, ruled: dict[str, Any], **without: Any) -> dict[str, Any]:
    return {
        "figure": figure,
        "kind": kind,
        "column_kind": ruled["column_kind"],
        "column": ruled["column"],
        "with_rule": ruled.get("estimate"),
        "with_rule_status": ruled["status"],
        "with_rule_reason": ruled.get("reason") if ruled["status"] != "ok" else None,
        "n_pairs_excluded": ruled.get("n_pairs_excluded"),
        **without,
    }


def _with_text(e: dict[str, Any]) -> str:
    if e["with_rule_status"] == "not_estimable":
        return "not estimable"
    if e["with_rule"] is None:
        return "no estimate"
    text = number(e["with_rule"])
    if e["kind"] == "icc" and e["n_pairs_excluded"]:
        text += f" ({e['n_pairs_excluded']} pair{'s' if e['n_pairs_excluded'] != 1 else ''} "
        text += "left out)"
    return text


def sensitivity_line(entries: Sequence[dict[str, Any]]) -> str:
    """The line: "Sensitivity (...): jury 0.474 / 0.474; clinician-clinician not estimable /
    -20.698; ...", each figure with the rule, then without it."""
    figures = "; ".join(
        f"{e['figure']} {_with_text(e)} / "
        + ("no estimate" if e["without_rule"] is None else number(e["without_rule"]))
        for e in entries
    )
    return (
        f"Sensitivity ({ROW_ALL.lower()}; with the estimability rule / without it, "
        f"{WITHOUT_RULE}): {figures or 'no headline figures'}."
    )


def headline_sensitivity(
    sub: pd.DataFrame,
    *,
    cells: Sequence[dict[str, Any]],
    differences: Sequence[dict[str, Any]],
) -> Sensitivity:
    """The all-items cells (every column) and differences with the rule (as the comparison
    computed them) and without it (recomputed on ``sub``, the all-items table)."""
    entries, raw = [], {}
    for cell in cells:
        value, why = _unruled(cell, sub)
        raw[cell["column"]] = value
        entries.append(
            _entry(cell["column"], "icc", cell, without_rule=value, without_rule_reason=why)
        )
    clinician = raw.get(CLINICIAN_COLUMN)
    for d in differences:
        machine = raw.get(d["column"])
        both = machine is not None and clinician is not None
        entries.append(
            _entry(
                f"{d['column']} minus {CLINICIAN_COLUMN}",
                "difference",
                d,
                without_rule=machine - clinician if both else None,
                without_rule_reason=None if both else "a term has no estimate",
            )
        )
    return Sensitivity(entries=entries, line=sensitivity_line(entries))
