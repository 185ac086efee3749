"""A stored snapshot as CSV, JSON or PDF: read from the snapshot only, never the ratings."""

from __future__ import annotations

from typing import Any

from agreement import analysis, plots
from agreement.models import ReportSnapshot
from medhelm_site.common.csv_export import csv_text

CSV_COLUMNS = ["report", *analysis.CELL_COLUMNS]


def snapshot_header(snapshot: ReportSnapshot) -> dict[str, Any]:
    """What the PDF's title page says about the snapshot."""
    return {
        "title": snapshot.title,
        "report": snapshot.pk,
        "study": f"{snapshot.study.name} (#{snapshot.study_id})",
        "created_at": snapshot.created_at.isoformat(),
        "input_hash": snapshot.input_hash,
        "previous": snapshot.previous_id,
        "parameters": ", ".join(f"{k}={v}" for k, v in sorted(snapshot.parameters.items())),
    }


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
        "method": snapshot.method,
        "results": snapshot.results,
    }


def _csv_rows(snapshot: ReportSnapshot) -> list[dict[str, Any]]:
    rows = [{"report": snapshot.pk, **c} for c in snapshot.results.get("cells", [])]
    difference = {
        "report": snapshot.pk,
        "section": "difference",
        "statistic": analysis.DIFFERENCE_FORM,
        "ci_method": snapshot.method.get("ci_method"),
        "confidence": snapshot.method.get("confidence"),
        "n_resamples": snapshot.method.get("n_resamples"),
    }
    rows += [{**difference, **d} for d in snapshot.results.get("differences", [])]
    return rows


def export_csv(snapshot: ReportSnapshot) -> str:
    """The comparison in long format: Table 2 and per-criterion cells, then the differences
    (section "difference"), one row per cell."""
    return csv_text(CSV_COLUMNS, _csv_rows(snapshot), line_end="\n")


def export_pdf(snapshot: ReportSnapshot) -> bytes:
    """The report as a PDF (title and method, tables, plots)."""
    return plots.pdf_bytes(
        header=snapshot_header(snapshot), results=snapshot.results, method=snapshot.method
    )
