"""What the report page shows, built once for the page and for the PDF typeset from it (the
PDF is the page's own HTML under a print base), from the snapshot's stored results only."""

from __future__ import annotations

import json
from typing import Any

from agreement import analysis, plots, selectors, services
from agreement.models import ReportSnapshot
from agreement.renderings.table2 import caption as table2_caption
from annotation.models import RatingStudy


def _display(cell: dict[str, Any] | None) -> dict[str, Any] | None:
    if cell is None:
        return None
    if cell.get("status") == "not_estimable":  # the reason instead of any number
        return {**cell, "estimate_text": analysis.NOT_ESTIMABLE, "ci_text": plots.DASH}
    return {
        **cell,
        "estimate_text": plots.fmt(cell.get("estimate")),
        "ci_text": plots.fmt_ci(cell.get("ci_low"), cell.get("ci_high")),
    }


def wide_table(results: dict[str, Any], section: str) -> list[dict[str, Any]]:
    """Rows of one section, each with its cells in column order (None where missing)."""
    columns = [c["column"] for c in results.get("columns", [])]
    cells = [c for c in results.get("cells", []) if c["section"] == section]
    order = list(dict.fromkeys((c["row_group"], c["row"]) for c in cells))
    index = {(c["row_group"], c["row"], c["column"]): c for c in cells}
    return [
        {
            "group": group,
            "label": row,
            "cells": [_display(index.get((group, row, col))) for col in columns],
        }
        for group, row in order
    ]


def report_context(*, study: RatingStudy, snapshot: ReportSnapshot) -> dict[str, Any]:
    """Everything agreement/report.html draws (the viewer's role aside)."""
    results = snapshot.results
    method = services.stated_method(snapshot)
    return {
        "study": study,
        "snapshot": snapshot,
        "created_by": selectors.member_pseudonyms(study=study).get(
            snapshot.created_by_id, plots.DASH
        ),
        "columns": results.get("columns", []),
        "table2": wide_table(results, "overall"),
        "table2_caption": table2_caption(results, method),
        "per_criterion": wide_table(results, "criterion"),
        "differences": [_display(d) for d in results.get("differences", [])],
        "leaderboard": results.get("leaderboard", {}),
        "coverage": results.get("coverage", {}),
        "changes": results.get("changes"),
        "method": method,
        "method_json": json.dumps(method, indent=2, sort_keys=True),
        "methods_paragraph": services.methods_text(snapshot),
        "sensitivity": results.get("sensitivity"),
        "parameters": snapshot.parameters,
        "figures": services.page_figures(snapshot),
        "later": selectors.recomputation_ids(snapshot=snapshot),
        "clinician_column": analysis.CLINICIAN_COLUMN,
        "judge_notes": selectors.judges_with_notes(study=study),
    }
