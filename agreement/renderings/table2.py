"""Table 2 as a paper prints it, drawn from a snapshot's stored results (the same cells the
CSV and JSON carry): one row per item subset (all items, then each category, then each
benchmark), one column per rater of ``results["columns"]`` (so a column added to the results
appears here too), each cell an estimate with its interval, or the reason it has none.

Pure: no Django, no formatting language; latex.py and markdown.py write it out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agreement.plots.numbers import DASH, finite, fmt
from agreement.stats.medhelm.form_choice import ASKED_AGAINST_DESIGN, MACHINE_FITTED, PAIRWISE

#: Krippendorff's alpha printed beneath each ICC, per level: (stored key, label).
ALPHA_LEVELS = (("interval", "interval"), ("ordinal", "ordinal"))

#: How a row group is headed in the printed table ("all" has no heading).
GROUP_TITLES = {"category": "By category", "benchmark": "By benchmark"}
NOT_ESTIMABLE_MARK = "n.e."


@dataclass(frozen=True)
class AlphaText:
    """Krippendorff's alpha at one level beneath a cell's ICC: estimate and interval as text
    (interval None where the resamples gave none)."""

    level: str
    estimate: str
    interval: str | None
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None


@dataclass(frozen=True)
class Table2Cell:
    """One printed cell: ``estimate``/``interval`` as text (digits fixed), or a ``mark`` (the
    reason in ``note``) where there is no number; a ``note`` beside a number says its interval
    is approximate; the raw values stay for checks."""

    estimate: str | None
    interval: str | None
    mark: str | None = None
    note: str | None = None
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    alphas: tuple[AlphaText, ...] = ()


@dataclass(frozen=True)
class Table2Row:
    group: str
    label: str
    n_items: str
    cells: list[Table2Cell]

    def alpha_levels(self) -> list[str]:
        """The alpha levels any cell of the row prints, in ALPHA_LEVELS order."""
        printed = {a.level for c in self.cells for a in c.alphas}
        return [level for level, _ in ALPHA_LEVELS if level in printed]


@dataclass(frozen=True)
class Table2:
    caption: str
    columns: list[tuple[str, str]]  # (name, kind)
    rows: list[Table2Row]
    notes: list[str] = field(default_factory=list)  # numbered reasons, in order of use

    def groups(self) -> list[tuple[str, list[Table2Row]]]:
        """The rows by group, groups in the order they first appear."""
        out: dict[str, list[Table2Row]] = {}
        for row in self.rows:
            out.setdefault(row.group, []).append(row)
        return list(out.items())


def _n_items(cells: Sequence[Mapping[str, Any] | None]) -> str:
    """The row's number of items: one number, or the range where cells differ."""
    ns = sorted({int(c["n_items"]) for c in cells if c and finite(c.get("n_items"))})
    if not ns:
        return DASH
    return str(ns[0]) if len(ns) == 1 else f"{ns[0]}{DASH}{ns[-1]}"


def _interval(lo: Any, hi: Any, digits: int) -> str | None:
    return f"({fmt(lo, digits)}, {fmt(hi, digits)})" if finite(lo) and finite(hi) else None


def _alphas(c: Mapping[str, Any], digits: int) -> tuple[AlphaText, ...]:
    """The cell's alpha per level (none for a report computed before alpha was reported, or
    where alpha has no estimate)."""
    out = []
    for level, label in ALPHA_LEVELS:
        value = c.get(f"alpha_{level}")
        if not finite(value):
            continue
        lo, hi = c.get(f"alpha_{level}_ci_low"), c.get(f"alpha_{level}_ci_high")
        out.append(
            AlphaText(
                level=label,
                estimate=fmt(value, digits),
                interval=_interval(lo, hi, digits),
                value=value,
                ci_low=lo,
                ci_high=hi,
            )
        )
    return tuple(out)


def is_difference(c: Mapping[str, Any]) -> bool:
    """A row of the differences table (machine minus clinician-clinician): the only rows that
    carry the clinician-clinician term beside their estimate."""
    return "clinician_icc" in c


def approximate_note(c: Mapping[str, Any], method: Mapping[str, Any]) -> str | None:
    """The note an interval gets when its cell has fewer items than the report's simulated
    coverage was checked for (``method["intervals"]``), or rests on an incomplete design
    (each item rated by some of the clinicians), where the simulation found it short too;
    None for other cells, cells with no interval and reports computed before the check was
    recorded."""
    record = method.get("intervals") or {}
    below, n = record.get("approximate_below_items"), c.get("n_items")
    if not (finite(below) and finite(n) and finite(c.get("ci_low")) and finite(c.get("ci_high"))):
        return None
    if float(n) < float(below):
        return str(record.get("approximate_note"))
    # a difference on a complete design needs more items (not in reports made before it)
    diff_below = record.get("difference_approximate_below_items")
    complete_difference = is_difference(c) and c.get("design") == "complete"
    if complete_difference and finite(diff_below) and float(n) < float(diff_below):
        return str(record.get("difference_approximate_note"))
    incomplete = record.get("approximate_incomplete_note")  # not in reports made before it
    # forms whose interval the simulation found covering on incomplete designs too
    checked = record.get("incomplete_checked_forms") or ()
    if c.get("clinician_form") in checked and c.get("column_kind") == "clinician":
        return None
    # machine sides found covering there (issue 21): differences and machine cells apart
    kind = "difference" if is_difference(c) else "machine"
    key = f"incomplete_checked_{kind}_forms"
    if c.get("machine_form") in (record.get(key) or ()):
        return None if kind == "difference" else _sparse_note(c, record)
    return str(incomplete) if incomplete and c.get("design") == "incomplete" else None


def _sparse_note(c: Mapping[str, Any], record: Mapping[str, Any]) -> str | None:
    """A checked (fitted) machine cell's note: none where its clinicians rated as many items
    each as the simulation checked, the sparse-design note where fewer, the general
    incomplete-design note where the cell does not say how many."""
    least, per = (
        record.get("incomplete_machine_min_ratings_per_clinician"),
        c.get("ratings_per_clinician"),
    )
    if not finite(least):
        return None
    if not finite(per):
        return str(record.get("approximate_incomplete_note"))
    return None if float(per) >= float(least) else str(record.get("approximate_sparse_note"))


def form_note(c: Mapping[str, Any]) -> str | None:
    """The note a clinician-clinician cell gets when it has another form than MedHELM's pair
    mean, or a form the report asked for against its design (its statistic and why); None
    otherwise and in older reports."""
    if c.get("column_kind") != "clinician" or c.get("clinician_form") is None:
        return None
    asked = str(c.get("form_reason") or "").startswith(ASKED_AGAINST_DESIGN)
    if c.get("clinician_form") == PAIRWISE and not asked:
        return None
    return f"clinician-clinician: {c.get('statistic')}; {c.get('form_reason')}"


def _cell(
    c: Mapping[str, Any] | None,
    notes: list[str],
    digits: int,
    method: Mapping[str, Any] | None = None,
) -> Table2Cell:
    if c is None:
        return Table2Cell(estimate=None, interval=None, mark=DASH)
    status = c.get("status")
    if status == "ok" and finite(c.get("estimate")):
        lo, hi = c.get("ci_low"), c.get("ci_high")
        interval = _interval(lo, hi, digits)
        note = approximate_note(c, method or {}) if interval else None
        form = form_note(c)
        if form is not None:
            note = form if note is None else f"{note}; {form}"
        if note is not None and note not in notes:
            notes.append(note)
        return Table2Cell(
            estimate=fmt(c["estimate"], digits),
            interval=interval,
            note=note,
            value=c["estimate"],
            ci_low=lo,
            ci_high=hi,
            alphas=_alphas(c, digits),
        )
    reason = str(c.get("reason") or status or "no estimate")
    if reason not in notes:
        notes.append(reason)
    mark = NOT_ESTIMABLE_MARK if status == "not_estimable" else DASH
    return Table2Cell(estimate=None, interval=None, mark=mark, note=reason)


def caption(results: Mapping[str, Any], method: Mapping[str, Any]) -> str:
    """What the table shows, from the stored method: statistic, interval, resamples, seed."""
    cells = [c for c in results.get("cells", []) if c.get("section") == "overall"]
    forms = method.get("forms") or {}
    fitted = [c for c in cells if c.get("machine_form") == MACHINE_FITTED]
    statistic = next(
        (
            c["statistic"]
            for c in cells
            if c.get("statistic") and c not in fitted and c.get("column_kind") != "clinician"
        ),
        forms.get("machine_vs_clinicians", "ICC"),
    )
    by = (method.get("intervals") or {}).get("by_statistic") or {}
    level = method.get("confidence")
    level_text = f"{float(level) * 100:g}% " if finite(level) else ""
    resamples = method.get("n_resamples")
    alpha = any(f"alpha_{level}" in c for c in cells for level, _ in ALPHA_LEVELS)
    return (
        f"Agreement with clinicians: {statistic}, with its {level_text}interval "
        f"({method.get('ci_method', 'bootstrap')}, {resamples} resamples, seed "
        f"{method.get('seed')}). Clinician-clinician: {method.get('forms', {}).get('clinician_clinician', 'mean pairwise ICC')}."
        + (
            " Where the clinicians have the two-way form on an incomplete design, the machine "
            f"columns give {fitted[0]['statistic']} (interval: "
            f"{by.get('machine_vs_clinicians_fitted', 'bootstrap over items, percentile')})."
            if fitted
            else ""
        )
        + (
            " Beneath each ICC: Krippendorff's alpha (interval and ordinal) with its interval "
            "on the same resamples."
            if alpha
            else ""
        )
    )


def table2(results: Mapping[str, Any], method: Mapping[str, Any], *, digits: int = 3) -> Table2:
    """Table 2 of stored ``results`` (section "overall"), captioned from ``method``."""
    columns = [
        (str(c["column"]), str(c.get("column_kind", ""))) for c in results.get("columns", [])
    ]
    cells = [c for c in results.get("cells", []) if c.get("section") == "overall"]
    index = {(c["row_group"], c["row"], c["column"]): c for c in cells}
    order = list(dict.fromkeys((c["row_group"], c["row"]) for c in cells))
    notes: list[str] = []
    rows = []
    for group, label in order:
        row_cells = [index.get((group, label, name)) for name, _ in columns]
        rows.append(
            Table2Row(
                group=str(group),
                label=str(label),
                n_items=_n_items(row_cells),
                cells=[_cell(c, notes, digits, method) for c in row_cells],
            )
        )
    return Table2(caption=caption(results, method), columns=columns, rows=rows, notes=notes)
