"""A stored snapshot as CSV, JSON, LaTeX or Markdown, and its method as stated: read from the
snapshot only, never the ratings. The page body (report_page) and the renderings registry
(renderings, which also gives the PDF and the figure files, read from stored renderings)
build on these; this module imports neither."""

from __future__ import annotations

from typing import Any

from agreement import analysis, renderings
from agreement.models import ReportSnapshot
from medhelm_site.common.csv_export import csv_text

CSV_COLUMNS = ["report", *analysis.CELL_COLUMNS, "flagged_verdicts"]
#: What a report computed before judge verdicts were flagged says about them.
FLAGGED_NOT_CHECKED = "included: this report was computed before judge verdicts were flagged"
SENSITIVITY_STATISTICS = {
    "with_rule": "headline figure with the estimability rule",
    "without_rule": f"headline figure without the estimability rule ({analysis.WITHOUT_RULE})",
}


def stated_method(snapshot: ReportSnapshot) -> dict[str, Any]:
    """The snapshot's method as stored; a report computed before the estimability rule
    existed also says the rule was not applied to it, and one computed before verdicts were
    flagged that every verdict was in (the stored record is not changed)."""
    method = snapshot.method
    if "estimability" not in method:
        method = {**method, "estimability": analysis.RULE_NOT_APPLIED_RECORD}
    if "flagged_verdicts" not in method:
        method = {**method, "flagged_verdicts": FLAGGED_NOT_CHECKED}
    return method


def flagged_verdicts(snapshot: ReportSnapshot) -> str:
    """ "excluded" or "included": what the report did with flagged judge verdicts."""
    return "excluded" if snapshot.parameters.get("exclude_flagged") else "included"


def export_json(snapshot: ReportSnapshot) -> dict[str, Any]:
    """The snapshot with its parameters, method and results, exactly as stored."""
    return {
        "report": {
            "id": snapshot.pk,
            "title": snapshot.title,
            "study": snapshot.study_id,
            "created_at": snapshot.created_at.isoformat(),
            "input_hash": snapshot.input_hash,
            "previous": snapshot.previous_id,
        },
        "parameters": snapshot.parameters,
        "method": stated_method(snapshot),
        "results": snapshot.results,
    }


def _csv_rows(snapshot: ReportSnapshot) -> list[dict[str, Any]]:
    report = {"report": snapshot.pk, "flagged_verdicts": flagged_verdicts(snapshot)}
    rows = [{**report, **c} for c in snapshot.results.get("cells", [])]
    difference = {
        **report,
        "section": "difference",
        "statistic": analysis.DIFFERENCE_FORM,
        "ci_method": snapshot.method.get("ci_method"),
        "confidence": snapshot.method.get("confidence"),
        "n_resamples": snapshot.method.get("n_resamples"),
    }
    rows += [{**difference, **d} for d in snapshot.results.get("differences", [])]
    for entry in snapshot.results.get("sensitivity", {}).get("entries", []):
        rows += _sensitivity_rows(report, entry)
    return rows


def _sensitivity_rows(report: dict[str, Any], e: dict[str, Any]) -> list[dict[str, Any]]:
    """One headline figure as two rows of section "sensitivity": with and without the rule."""
    where = {
        **report,
        "section": "sensitivity",
        "row_group": "all",
        "row": analysis.ROW_ALL,
        "column_kind": e["column_kind"],
        "column": e["figure"],
    }
    without = e["without_rule"]
    return [
        {
            **where,
            "statistic": SENSITIVITY_STATISTICS["with_rule"],
            "estimate": e["with_rule"],
            "status": e["with_rule_status"],
            "reason": e["with_rule_reason"],
            "n_pairs_excluded": e["n_pairs_excluded"],
        },
        {
            **where,
            "statistic": SENSITIVITY_STATISTICS["without_rule"],
            "estimate": without,
            "status": "ok" if without is not None else "insufficient",
            "reason": e["without_rule_reason"],
        },
    ]


def export_csv(snapshot: ReportSnapshot) -> str:
    """The comparison in long format (every row says whether flagged judge verdicts were
    included): Table 2 and per-criterion cells, then the differences
    (section "difference"), one row per cell, then the headline figures with and without the
    estimability rule (section "sensitivity"). A cell the rule says is not estimable has
    status "not_estimable", the reason and no estimate, interval or band."""
    return csv_text(CSV_COLUMNS, _csv_rows(snapshot), line_end="\n")


def methods_text(snapshot: ReportSnapshot) -> str:
    """The methods paragraph of the snapshot, from its stored method record."""
    return renderings.methods_paragraph(stated_method(snapshot), input_hash=snapshot.input_hash)


def report_table2(snapshot: ReportSnapshot) -> renderings.Table2:
    """Table 2 of the snapshot as the paper renderings print it."""
    return renderings.table2(snapshot.results, stated_method(snapshot))


def export_latex(snapshot: ReportSnapshot) -> str:
    """Table 2 as a booktabs table, then the methods paragraph (LaTeX)."""
    return renderings.latex_file(report_table2(snapshot), methods_text(snapshot))


def export_markdown(snapshot: ReportSnapshot) -> str:
    """Table 2 as a pipe table, then the methods paragraph (Markdown)."""
    return renderings.markdown_file(report_table2(snapshot), methods_text(snapshot))
