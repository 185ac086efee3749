"""The report's tables as monospaced text lines, for the PDF's text pages."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from agreement.analysis.leaderboard import COST_BY_JUDGE_COLUMNS
from agreement.plots.numbers import DASH, fmt, fmt_ci
from medhelm_site.common.figures import wrap_line

LINE_WIDTH = 170
CELL_LEGEND = (
    f"  {'row':<40} {'column':<24} {'ICC':>7}  {'95% CI':<20} {'items':>5} "
    f"{'raters':<14} {'Koo & Li band (CI)':<22}"
)
DIFFERENCE_LEGEND = (
    f"  {'row':<40} {'machine':<24} {'diff.':>7}  {'95% CI':<20} {'machine ICC':>11} "
    f"{'clinician ICC':>13} {'pairs left out':>14} {'items':>5}"
)
BY_MODEL_FIELDS = [
    "model",
    "n_items_clinician",
    "clinician_mean",
    "n_items_jury",
    "jury_mean",
    "win_rate_jury",
    "win_rate_clinician",
    "cost_per_item",
    "cost_estimate_per_item",
]
BY_MODEL_CATEGORY_FIELDS = [
    "model",
    "category",
    "n_items_clinician",
    "clinician_mean",
    "n_items_jury",
    "jury_mean",
]
COST_BY_JUDGE_FIELDS = list(COST_BY_JUDGE_COLUMNS)
COVERAGE_COUNTS = (
    "n_items",
    "n_items_rated",
    "n_items_short",
    "missing_values",
    "rated_items_without_jury",
)
MOVED_CELL_FIELDS = ["section", "row", "column", "change", "previous", "current", "delta"]


def _wrap(line: str, indent: int) -> list[str]:
    return wrap_line(line, width=LINE_WIDTH, continuation_indent=indent)


def _cell_line(c: Mapping[str, Any]) -> str:
    head = f"  {c['row'][:40]:<40} {c['column'][:24]:<24}"
    left_out = f"  [{c['pairs_excluded']}]" if c.get("pairs_excluded") else ""
    if c.get("status") == "not_estimable":  # the reason, never the number
        return f"{head} not estimable: {c.get('reason')}{left_out}"
    if c.get("status") != "ok":
        return f"{head} {DASH:>7}  no estimate: {c.get('reason')}"
    n_raters = f"{fmt(c.get('n_raters'))}" + (
        f" ({c['n_pairs']} pairs)" if c.get("n_pairs") else ""
    )
    note = f"  [{c['reason']}]" if c.get("reason") else ""
    drop = f"  dropped: {c['dropped_raters']}" if c.get("dropped_raters") else ""
    return (
        f"{head} {fmt(c.get('estimate')):>7}  {fmt_ci(c.get('ci_low'), c.get('ci_high')):<20} "
        f"{fmt(c.get('n_items')):>5} {n_raters:<14} {c.get('band') or '':<22}{left_out}{note}"
        f"{drop}"
    )


def _difference_line(d: Mapping[str, Any]) -> str:
    head = f"  {d['row'][:40]:<40} {d['column'][:24]:<24}"
    if d.get("status") == "not_estimable":
        return f"{head} not estimable: {d.get('reason')}"
    if d.get("status") != "ok":
        return f"{head} {DASH:>7}  no estimate: {d.get('reason')}"
    note = f"  [{d['reason']}]" if d.get("reason") else ""
    return (
        f"{head} {fmt(d.get('estimate')):>7}  {fmt_ci(d.get('ci_low'), d.get('ci_high')):<20} "
        f"{fmt(d.get('machine_icc')):>11} {fmt(d.get('clinician_icc')):>13} "
        f"{fmt(d.get('n_pairs_excluded')):>14} {fmt(d.get('n_items')):>5}{note}"
    )


def difference_lines(differences: list[Mapping[str, Any]]) -> list[str]:
    """Machine minus clinician-clinician, one line each (reasons in full, wrapped)."""
    lines = ["Machine minus clinician-clinician ICC", DIFFERENCE_LEGEND]
    if not differences:
        return [*lines, "  (none)", ""]
    lines += [ln for d in differences for ln in _wrap(_difference_line(d), 60)]
    return [*lines, ""]


def _text(value: Any, digits: int = 3) -> str:
    return value if isinstance(value, str) else fmt(value, digits)


def _records(title: str, rows: Iterable[Mapping[str, Any]], columns: list[str]) -> list[str]:
    """A titled table of `rows` with one column per name in `columns` (at most 40 wide)."""
    rows = list(rows)
    lines = [title]
    if not rows:
        return [*lines, "  (none)", ""]
    widths = {c: min(max(len(c), *(len(_text(r.get(c))) for r in rows)), 40) for c in columns}
    lines.append("  " + " ".join(f"{c:<{widths[c]}}" for c in columns))
    for r in rows:
        vals = [_text(r.get(c), 4) for c in columns]
        lines.append(
            "  "
            + " ".join(f"{str(v)[:40]:<{widths[c]}}" for v, c in zip(vals, columns, strict=True))
        )
    return [*lines, ""]


def title_lines(header: Mapping[str, Any], method: Mapping[str, Any]) -> list[str]:
    """The title page: title, header fields, the estimability rule, then every method entry."""
    lines = [str(header.get("title", "Agreement report")), ""]
    lines += [f"{k}: {v}" for k, v in header.items() if k != "title"]
    lines += ["", "Method"]
    rule = method.get("estimability") or {}
    lines += _wrap(f"  estimability rule: {rule.get('text', DASH)}", 6)
    if rule.get("applied"):
        lines += _wrap(
            f"    (bounds {rule['bounds']}, widest interval {rule['max_ci_width']}, fewest shared "
            f"items {rule['min_shared_items']})",
            6,
        )
    for key, value in method.items():
        if key == "estimability":
            continue
        text = json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else str(value)
        lines += _wrap(f"  {key}: {text}", 6)
    return lines


def sensitivity_lines(sensitivity: Mapping[str, Any] | None) -> list[str]:
    """The headline figures with and without the estimability rule, as one wrapped line."""
    if not sensitivity:
        return ["No sensitivity line: the estimability rule was not applied to this report.", ""]
    return [*_wrap(str(sensitivity["line"]), 2), ""]


def table2_lines(cells: list[Mapping[str, Any]]) -> list[str]:
    """Table 2: the overall cells of ``cells``."""
    lines = ["Table 2: agreement with clinicians (ICC, bootstrap interval)", CELL_LEGEND]
    lines += [ln for c in cells if c["section"] == "overall" for ln in _wrap(_cell_line(c), 60)]
    return [*lines, ""]


def criterion_lines(cells: list[Mapping[str, Any]]) -> list[str]:
    """The per-criterion cells of ``cells``."""
    lines = ["Per criterion (metrics: their overall value against each criterion)", CELL_LEGEND]
    lines += [ln for c in cells if c["section"] == "criterion" for ln in _wrap(_cell_line(c), 60)]
    return [*lines, ""]


def leaderboard_lines(board: Mapping[str, Any]) -> list[str]:
    """Scores, win rates and jury cost by model, by model and category, and by judge."""
    lines = _records(
        "Leaderboard by model (raw-scale composites; HELM win rate; jury cost per item)",
        board.get("by_model", []),
        BY_MODEL_FIELDS,
    )
    lines += _records(
        "By model and category", board.get("by_model_category", []), BY_MODEL_CATEGORY_FIELDS
    )
    lines += _records("Jury cost by judge", board.get("cost_by_judge", []), COST_BY_JUDGE_FIELDS)
    for key, note in board.get("notes", {}).items():
        lines += _wrap(f"  {key}: {note}", 6)
    return lines


def coverage_lines(cov: Mapping[str, Any]) -> list[str]:
    """What the score table left out, and the judge calls by status."""
    lines = ["", "Coverage"]
    lines += [f"  {key}: {cov.get(key)}" for key in COVERAGE_COUNTS]
    cannot_assess = json.dumps(cov.get("cannot_assess", {}), sort_keys=True)
    lines += _wrap(f"  cannot assess: {cannot_assess}", 6)
    lines += _wrap(f"  invalid judge scores: {json.dumps(cov.get('invalid_judge_scores', {}))}", 6)
    lines += flagged_lines(cov)
    lines += _records(
        "  Raters with too few items",
        cov.get("raters_few_items", []),
        ["rater", "rater_kind", "n_items"],
    )
    calls = [{**j, "by_status": json.dumps(j["by_status"])} for j in cov.get("judge_calls", [])]
    lines += _records("  Judge calls", calls, ["judge", "total", "failed", "by_status"])
    return lines


def flagged_lines(cov: Mapping[str, Any]) -> list[str]:
    """Flagged judge verdicts per judge, and whether the report left them out."""
    if "flagged_verdicts" not in cov:
        return ["  flagged judge verdicts: not checked (computed before verdicts were flagged)"]
    flagged = json.dumps(cov["flagged_verdicts"], sort_keys=True)
    state = "excluded" if cov.get("flagged_verdicts_excluded") else "included"
    return _wrap(f"  flagged judge verdicts ({state}), items per judge: {flagged}", 6)


def changes_lines(changes: Mapping[str, Any] | None) -> list[str]:
    """What moved since the previous snapshot (nothing for a first report)."""
    if not changes:
        return []
    lines = ["Changes since the previous snapshot"]
    lines += _wrap("  " + json.dumps({k: v for k, v in changes.items() if k != "cells"}), 6)
    lines += _records("  Cells that moved", changes.get("cells", []), MOVED_CELL_FIELDS)
    return lines


def report_lines(
    *, header: Mapping[str, Any], results: Mapping[str, Any], method: Mapping[str, Any]
) -> tuple[list[str], list[str]]:
    """(title and method page lines, table lines) as the PDF prints them."""
    cells = results.get("cells", [])
    lines = table2_lines(cells)
    lines += sensitivity_lines(results.get("sensitivity"))
    lines += criterion_lines(cells)
    lines += difference_lines(results.get("differences", []))
    lines += leaderboard_lines(results.get("leaderboard", {}))
    lines += coverage_lines(results.get("coverage", {}))
    lines += changes_lines(results.get("changes"))
    return title_lines(header, method), lines
