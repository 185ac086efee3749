"""MedHELM's Table 2 and its per-criterion companion, with the machine-minus-clinician
differences.

Rows: all items, each taxonomy category, each benchmark; columns: the jury, each judge, each
metric, clinician-clinician. Each row is analysed on its own rows of the table, so z-scores
are within rater over that subset (a category's row is what MedHELM would give on that
category alone). Every cell draws its resamples from the report's seed, so a cell is
reproducible on its own. Per criterion, a metric's one overall value per item is compared
with the clinicians' scores on that criterion.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from agreement.analysis.cells import (
    CELL_COLUMNS,
    cell,
    clinician_cell,
    difference_cell,
    machine_cell,
)
from agreement.analysis.settings import (
    CLINICIAN_COLUMN,
    MACHINE_FORM,
    PAIRWISE_FORM,
    ROW_ALL,
    Settings,
)

_KIND_ORDER = {"jury": 0, "judge": 1, "metric": 2}
_COUNT_COLUMNS = ("n_items", "n_raters", "n_pairs", "n_resamples", "n_valid_resamples")
DIFFERENCE_COLUMNS = [
    "row_group",
    "row",
    "column_kind",
    "column",
    "estimate",
    "ci_low",
    "ci_high",
    "machine_icc",
    "clinician_icc",
    "n_items",
    "n_valid_resamples",
    "status",
    "reason",
]


@dataclass(frozen=True)
class Comparison:
    cells: pd.DataFrame  # CELL_COLUMNS; section "overall" (Table 2) and "criterion"
    differences: pd.DataFrame  # DIFFERENCE_COLUMNS
    rows: list[dict[str, str]]  # {row_group, row} in display order
    columns: list[dict[str, str]]  # {column_kind, column} in display order
    criteria: list[str]
    settings: Settings = field(repr=False)


def machine_columns(table: pd.DataFrame) -> list[tuple[str, str]]:
    """(kind, rater) of every machine rater: the jury, judges, metrics, each sorted by name."""
    pairs = table.loc[table["rater_kind"] != "clinician", ["rater_kind", "rater"]]
    unique = pairs.drop_duplicates().itertuples(index=False, name=None)
    return sorted(unique, key=lambda p: (_KIND_ORDER[p[0]], str(p[1])))


def row_subsets(table: pd.DataFrame) -> list[tuple[str, str, np.ndarray]]:
    """(row_group, row, item ids): all items, then each category, then each benchmark."""
    out = [("all", ROW_ALL, np.sort(table["item"].unique()))]
    for group in ("category", "benchmark"):
        for label, items in table.groupby(group, sort=True)["item"]:
            out.append((group, str(label), np.sort(items.unique())))
    return out


def criteria_of(table: pd.DataFrame) -> list[str]:
    """Clinician criteria in order of first appearance."""
    clin = table.loc[table["rater_kind"] == "clinician", "criterion"]
    return list(dict.fromkeys(clin))


def criterion_subset(table: pd.DataFrame, criterion: str) -> pd.DataFrame:
    """The rows of one criterion, plus every metric row (a metric's one overall value)."""
    keep = (table["criterion"] == criterion) | (table["rater_kind"] == "metric")
    return table.loc[keep]


def row_cells(
    sub: pd.DataFrame, *, section: str, group: str, row: str, machines: list, s: Settings
) -> list[dict[str, Any]]:
    """Every machine's cell of one row, then the clinician-clinician cell."""
    where = {"section": section, "row_group": group, "row": row}
    out = [
        cell(
            **where,
            column_kind=kind,
            column=rater,
            statistic=MACHINE_FORM,
            **machine_cell(sub, rater, s),
        )
        for kind, rater in machines
    ]
    out.append(
        cell(
            **where,
            column_kind="clinician",
            column=CLINICIAN_COLUMN,
            statistic=PAIRWISE_FORM,
            **clinician_cell(sub, s),
        )
    )
    return out


def _difference_row(
    sub: pd.DataFrame,
    *,
    group: str,
    row: str,
    machine: tuple[str, str],
    cells: dict[str, dict[str, Any]],
    s: Settings,
) -> dict[str, Any]:
    """One machine minus clinician-clinician, or why not (whichever term has no estimate)."""
    kind, rater = machine
    m_cell, c_cell = cells[rater], cells[CLINICIAN_COLUMN]
    if m_cell["status"] != "ok" or c_cell["status"] != "ok":
        bad = m_cell if m_cell["status"] != "ok" else c_cell
        result = {"status": "insufficient", "reason": f"{bad['column']}: {bad['reason']}"}
    else:
        result = difference_cell(sub, rater, s)
    return {
        **dict.fromkeys(DIFFERENCE_COLUMNS),
        "row_group": group,
        "row": row,
        "column_kind": kind,
        "column": rater,
        "machine_icc": m_cell.get("estimate"),
        "clinician_icc": c_cell.get("estimate"),
        **result,
    }


def _overall(
    table: pd.DataFrame, subsets: list, machines: list, s: Settings
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Table 2's cells per row, and the differences: the jury on every row, every machine
    on all items."""
    cells: list[dict[str, Any]] = []
    diffs: list[dict[str, Any]] = []
    for group, row, items in subsets:
        sub = table.loc[table["item"].isin(items)]
        these = row_cells(sub, section="overall", group=group, row=row, machines=machines, s=s)
        cells.extend(these)
        by_column = {c["column"]: c for c in these}
        targets = machines if group == "all" else [m for m in machines if m[0] == "jury"]
        diffs += [
            _difference_row(sub, group=group, row=row, machine=m, cells=by_column, s=s)
            for m in targets
        ]
    return cells, diffs


def _counts_as_int(frame: pd.DataFrame) -> pd.DataFrame:
    """Counts stay whole numbers where some cells have none (nullable Int64, not float)."""
    for col in _COUNT_COLUMNS:
        if col in frame:
            frame[col] = frame[col].astype("Int64")
    return frame


def comparison_table(
    table: pd.DataFrame,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    method: str = "bca",
    min_items: int = 3,
    min_shared_items: int = 2,
) -> Comparison:
    """MedHELM Table 2 on every row subset, per criterion, and the differences (see the
    module docstring)."""
    s = Settings(
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        method=method,
        min_items=min_items,
        min_shared_items=min_shared_items,
    )
    machines = machine_columns(table)
    subsets = row_subsets(table)
    cells, diffs = _overall(table, subsets, machines, s)
    criteria = criteria_of(table)
    for criterion in criteria:
        sub = criterion_subset(table, criterion)
        cells += row_cells(
            sub, section="criterion", group="criterion", row=criterion, machines=machines, s=s
        )
    return Comparison(
        cells=_counts_as_int(pd.DataFrame(cells, columns=CELL_COLUMNS)),
        differences=_counts_as_int(pd.DataFrame(diffs, columns=DIFFERENCE_COLUMNS)),
        rows=[{"row_group": g, "row": r} for g, r, _ in subsets],
        columns=[{"column_kind": k, "column": r} for k, r in machines]
        + [{"column_kind": "clinician", "column": CLINICIAN_COLUMN}],
        criteria=criteria,
        settings=s,
    )
