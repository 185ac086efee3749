"""MedHELM's Table 2 and its per-criterion companion, with the machine-minus-clinician
differences.

Rows: all items, each taxonomy category, each benchmark; columns: the jury, each judge, each
metric, clinician-clinician. Each row is analysed on its own rows of the table, so z-scores
are within rater over that subset (a category's row is what MedHELM would give on that
category alone). Every cell draws its resamples from the report's seed, so a cell is
reproducible on its own. Per criterion, a metric's one overall value per item is compared
with the clinicians' scores on that criterion.

Every cell and every clinician pair is held to the estimability rule of the settings
(agreement.stats.estimability); a difference is not estimable when either term is not. The
headline figures (all items) are also given without the rule (:mod:`.sensitivity`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from agreement.analysis.cells import (
    CELL_COLUMNS,
    cell,
    clinician_cell_steps,
    machine_cell_steps,
)
from agreement.analysis.difference_cells import difference_steps
from agreement.analysis.jury import jury_compositions, leave_one_out_juries, single_judge
from agreement.analysis.row_workers import rows_side_by_side
from agreement.analysis.sensitivity import Sensitivity, headline_sensitivity
from agreement.analysis.settings import (
    CLINICIAN_COLUMN,
    DEFAULT_MAX_CI_WIDTH,
    MACHINE_FORM,
    PAIRWISE_FORM,
    ROW_ALL,
    Settings,
)
from agreement.analysis.steps import run_cells
from agreement.stats import MEDHELM_MIN_SHARED_ITEMS
from agreement.stats.medhelm import BY_DESIGN

_KIND_ORDER = {"jury": 0, "judge": 1, "metric": 2}
_COUNT_COLUMNS = (
    "n_items",
    "n_raters",
    "n_pairs",
    "n_pairs_excluded",
    "n_resamples",
    "n_valid_resamples",
)
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
    "n_pairs_excluded",
    "status",
    "reason",
    "rule_codes",
    "clinician_form",
    "design",
    "machine_form",
]


@dataclass(frozen=True)
class Comparison:
    cells: pd.DataFrame  # CELL_COLUMNS; section "overall" (Table 2) and "criterion"
    differences: pd.DataFrame  # DIFFERENCE_COLUMNS
    rows: list[dict[str, str]]  # {row_group, row} in display order
    columns: list[dict[str, str]]  # {column_kind, column} in display order
    criteria: list[str]
    sensitivity: Sensitivity
    settings: Settings = field(repr=False)
    #: judges, single_judge, weights, compositions (best first), note: see analysis.jury
    jury: dict[str, Any] = field(default_factory=dict)


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
    return _row(sub, section=section, group=group, row=row, machines=machines, s=s)[0]


def _row(
    sub: pd.DataFrame,
    *,
    section: str,
    group: str,
    row: str,
    machines: list,
    s: Settings,
    differences: tuple[tuple[str, str], ...] = (),
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The row's cells (:func:`row_cells`) and the differences of the ``differences`` machines
    (:func:`_difference_row`), every bootstrap of the row in one pass over its resamples
    (agreement.analysis.steps). A difference is computed beside the cells and kept only
    where both its cells have an estimate: waiting for them would take a second pass."""
    where = {"section": section, "row_group": group, "row": row}
    # each difference takes the clinician cell's form: both decide it from the same rows
    done = run_cells(
        [
            *(machine_cell_steps(sub, rater, s) for _, rater in machines),
            clinician_cell_steps(sub, s),
            *(difference_steps(sub, rater, s) for _, rater in differences),
        ]
    )
    cells = [
        cell(**where, column_kind=kind, column=rater, **{"statistic": MACHINE_FORM, **fields})
        for (kind, rater), fields in zip(machines, done[: len(machines)], strict=True)
    ]
    cells.append(
        cell(
            **where,
            column_kind="clinician",
            column=CLINICIAN_COLUMN,
            **{"statistic": PAIRWISE_FORM, **done[len(machines)]},
        )
    )
    by_column = {c["column"]: c for c in cells}
    diffs = [
        _difference_row(group=group, row=row, machine=m, cells=by_column, computed=computed)
        for m, computed in zip(differences, done[len(machines) + 1 :], strict=True)
    ]
    return cells, diffs


def _difference_row(
    *,
    group: str,
    row: str,
    machine: tuple[str, str],
    cells: dict[str, dict[str, Any]],
    computed: dict[str, Any],
) -> dict[str, Any]:
    """One machine minus clinician-clinician (``computed``, agreement.analysis.difference_cells),
    or why not: a term with no estimate makes it insufficient, a term that is not estimable
    makes it not estimable (naming the term)."""
    kind, rater = machine
    m_cell, c_cell = cells[rater], cells[CLINICIAN_COLUMN]
    bad = [c for c in (m_cell, c_cell) if c["status"] != "ok"]
    if bad:
        ruled_out = [c for c in bad if c["status"] == "not_estimable"]
        result = {
            "status": "not_estimable" if ruled_out else "insufficient",
            "reason": "; ".join(
                f"{c['column']} is not estimable: {c['reason']}"
                if c["status"] == "not_estimable"
                else f"{c['column']}: {c['reason']}"
                for c in bad
            ),
            "rule_codes": ",".join(c["rule_codes"] for c in ruled_out) or None,
        }
    else:
        result = computed
    return {
        **dict.fromkeys(DIFFERENCE_COLUMNS),
        "row_group": group,
        "row": row,
        "column_kind": kind,
        "column": rater,
        "machine_icc": m_cell.get("estimate"),
        "clinician_icc": c_cell.get("estimate"),
        "n_pairs_excluded": c_cell.get("n_pairs_excluded"),
        **result,
    }


def _overall_row(
    table: pd.DataFrame, group: str, row: str, items: np.ndarray, machines: list, s: Settings
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One row of Table 2 and its differences: the jury on every row, every machine on all
    items."""
    sub = table.loc[table["item"].isin(items)]
    targets = machines if group == "all" else [m for m in machines if m[0] == "jury"]
    return _row(
        sub,
        section="overall",
        group=group,
        row=row,
        machines=machines,
        s=s,
        differences=tuple(targets),
    )


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
    min_shared_items: int = MEDHELM_MIN_SHARED_ITEMS,
    max_ci_width: float = DEFAULT_MAX_CI_WIDTH,
    judge_weights: Mapping[str, float] | None = None,
    progress: Callable[[int, int], None] | None = None,
    clinician_form: str = BY_DESIGN,
    workers: int | None = 1,
) -> Comparison:
    """MedHELM Table 2 on every row subset, per criterion, and the differences (see the
    module docstring). ``min_shared_items`` and ``max_ci_width`` are the estimability rule's
    (with the bounds [-1, 1]). With a single judge its column is left out: the jury's column
    is that judge (``columns`` says so). ``judge_weights`` (judge label -> weight, default 1)
    build the leave-one-judge-out juries (section "jury_composition", :mod:`.jury`).
    ``progress(cells_done, cells_total)`` is called after each row of cells (each cell is one
    bootstrap of ``n_resamples``). ``clinician_form`` is the clinician-clinician form: the
    one each cell's design decides (agreement.stats.medhelm.form_choice), or one form in every
    cell (MedHELM's pair mean everywhere reproduces the published method as it is).
    ``workers``: rows computed at once, each in a process of its own
    (:func:`agreement.processes.process_count`: None or 0, one per core; the default,
    1, computes every row in the caller's process; the numbers do not depend on it)."""
    s = Settings(
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        method=method,
        min_items=min_items,
        min_shared_items=min_shared_items,
        max_ci_width=max_ci_width,
        clinician_form=clinician_form,
    )
    alone = single_judge(table)
    machines = [m for m in machine_columns(table) if m != ("judge", alone)]
    subsets = row_subsets(table)
    criteria = criteria_of(table)
    total = (len(subsets) + len(criteria)) * (len(machines) + 1)
    done = 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, total)

    tick(0)  # the cells' stage starts now (the reading before it is its own stage)
    with rows_side_by_side(workers) as submit:
        # the largest rows first (all items, each criterion), so the small ones fill the end
        overall = [
            submit(partial(_overall_row, table, g, r, items, machines, s))
            for g, r, items in subsets[:1]
        ]
        by_criterion = [
            submit(
                partial(
                    row_cells,
                    criterion_subset(table, criterion),
                    section="criterion",
                    group="criterion",
                    row=criterion,
                    machines=machines,
                    s=s,
                )
            )
            for criterion in criteria
        ]
        # the leave-one-out juries need nothing of the all-items row: computed beside it, as
        # large as a criterion's row, before the small rows that fill the end
        all_items = table  # the all-items row's subset: every item of the table
        leave_one_out = submit(
            partial(leave_one_out_juries, all_items, weights=judge_weights or {}, s=s)
        )
        overall += [
            submit(partial(_overall_row, table, g, r, items, machines, s))
            for g, r, items in subsets[1:]
        ]
        # the jury's compositions and the headline's sensitivity read the all-items row: put
        # together here, in this process, while the workers go on with the other rows
        cells, diffs = overall[0].result()
        tick(len(cells))
        compositions = jury_compositions(
            all_items,
            overall_cells=list(cells),
            weights=judge_weights or {},
            s=s,
            leave_one_out=leave_one_out.result(),
        )
        sensitivity = headline_sensitivity(all_items, cells=list(cells), differences=list(diffs))
        for future in overall[1:]:
            these, row_diffs = future.result()
            cells += these
            diffs += row_diffs
            tick(len(these))
        for future in by_criterion:
            these = future.result()
            cells += these
            tick(len(these))
    cells += compositions.cells
    return Comparison(
        cells=_counts_as_int(pd.DataFrame(cells, columns=CELL_COLUMNS)),
        differences=_counts_as_int(pd.DataFrame(diffs, columns=DIFFERENCE_COLUMNS)),
        rows=[{"row_group": g, "row": r} for g, r, _ in subsets],
        columns=[_column(k, r, alone) for k, r in machines]
        + [{"column_kind": "clinician", "column": CLINICIAN_COLUMN}],
        criteria=criteria,
        sensitivity=sensitivity,
        settings=s,
        jury=compositions.summary,
    )


def _column(kind: str, rater: str, alone: str | None) -> dict[str, str]:
    """A column's kind and rater; the jury of a single judge says it is that judge."""
    out = {"column_kind": kind, "column": rater}
    if kind == "jury" and alone is not None:
        out["note"] = f"= judge {alone} alone (the only judge)"
    return out
