"""The report page's body: what the page shows that comes from the snapshot alone (method,
the paper's methods paragraph and downloads, Table 2, per criterion, differences,
leaderboard, coverage, figures), rendered to HTML once and stored as the snapshot's "page"
rendering (agreement.services.renderings). Opening a stored report then reads one stored
string instead of decoding the results and rendering thousands of table cells on every open,
and the PDF typesets the same stored body; the header (who computed it, later
recomputations, the recompute form) is still rendered per request."""

from __future__ import annotations

import json
from typing import Any

from django.template.loader import render_to_string

from agreement import analysis, plots
from agreement.models import ReportSnapshot
from agreement.renderings.table2 import approximate_note, form_note
from agreement.renderings.table2 import caption as table2_caption
from agreement.services.exports import methods_text, stated_method

BODY_TEMPLATE = "agreement/_report_body.html"


ALPHA_LABELS = {"interval": "\u03b1 interval", "ordinal": "\u03b1 ordinal"}


def _alphas(cell: dict[str, Any]) -> list[dict[str, str]]:
    """Krippendorff's alpha of a cell per level, as text (none for a report computed before
    alpha was reported)."""
    return [
        {
            "label": label,
            "estimate_text": plots.fmt(cell.get(f"alpha_{level}")),
            "ci_text": plots.fmt_ci(
                cell.get(f"alpha_{level}_ci_low"), cell.get(f"alpha_{level}_ci_high")
            ),
        }
        for level, label in ALPHA_LABELS.items()
        if f"alpha_{level}" in cell
    ]


def _display(
    cell: dict[str, Any] | None, method: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    if cell is None:
        return None
    # a clinician cell not in MedHELM's pair mean, or in a form asked for against its design:
    # its form and why
    note = form_note(cell)
    if cell.get("status") == "not_estimable":  # the reason instead of any number
        return {
            **cell,
            "estimate_text": analysis.NOT_ESTIMABLE,
            "ci_text": plots.DASH,
            "form_note": note,
        }
    return {
        **cell,
        "estimate_text": plots.fmt(cell.get("estimate")),
        "ci_text": plots.fmt_ci(cell.get("ci_low"), cell.get("ci_high")),
        "alphas": _alphas(cell),
        "approximate_note": approximate_note(cell, method or {}),
        "form_note": note,
    }


def wide_table(
    results: dict[str, Any], section: str, method: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Rows of one section, each with its cells in column order (None where missing); a
    cell's interval on fewer items than ``method`` checked is marked approximate."""
    columns = [c["column"] for c in results.get("columns", [])]
    cells = [c for c in results.get("cells", []) if c["section"] == section]
    order = list(dict.fromkeys((c["row_group"], c["row"]) for c in cells))
    index = {(c["row_group"], c["row"], c["column"]): c for c in cells}
    return [
        {
            "group": group,
            "label": row,
            "cells": [_display(index.get((group, row, col)), method) for col in columns],
        }
        for group, row in order
    ]


def body_context(snapshot: ReportSnapshot, figures: list[dict[str, str | None]]) -> dict[str, Any]:
    """The body template's context, from the stored snapshot and its stored figures."""
    results = snapshot.results
    method = stated_method(snapshot)
    return {
        "study": snapshot.study,
        "snapshot": snapshot,
        "columns": results.get("columns", []),
        "table2": wide_table(results, "overall", method),
        "table2_caption": table2_caption(results, method),
        "methods_paragraph": methods_text(snapshot),
        "per_criterion": wide_table(results, "criterion", method),
        "differences": [_display(d, method) for d in results.get("differences", [])],
        "jury": results.get("jury", {}),
        "computed_on": results.get("computed_on"),
        "leaderboard": results.get("leaderboard", {}),
        "coverage": results.get("coverage", {}),
        "changes": results.get("changes"),
        "method": method,
        "method_json": json.dumps(method, indent=2, sort_keys=True),
        "sensitivity": results.get("sensitivity"),
        "figures": figures,
    }


def render_body(snapshot: ReportSnapshot, figures: list[dict[str, str | None]]) -> bytes:
    """The body's HTML (UTF-8), as the page includes it."""
    return render_to_string(BODY_TEMPLATE, body_context(snapshot, figures)).encode()
