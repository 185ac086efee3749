"""A stored report as CSV, JSON and PDF, with names drawn safely and cells that cannot act
as spreadsheet formulas."""

from __future__ import annotations

import csv
import io

from agreement import analysis, plots, services
from delphi.models import TaxonomyNode
from jury.models import Judge

PARAMS = {"n_resamples": 60, "seed": 5}
METHOD_KEYS = {
    "forms",
    "pairwise_rule",
    "ci_method",
    "n_resamples",
    "seed",
    "confidence",
    "n_items",
    "n_raters",
    "package_versions",
    "created_at",
}


def test_exports_csv_json_pdf(built, client, pdf_page_count):
    snap = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    client.force_login(built.members.researcher)
    base = f"/studies/{built.study.pk}/agreement/{snap.pk}/report"
    response = client.get(base + ".csv")
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    columns = ["report", *analysis.CELL_COLUMNS, "flagged_verdicts"]
    assert list(rows[0]) == services.CSV_COLUMNS == columns
    assert {r["section"] for r in rows} == {"overall", "criterion", "difference", "sensitivity"}
    assert len(rows) == (
        len(snap.results["cells"])
        + len(snap.results["differences"])
        + 2 * len(snap.results["sensitivity"]["entries"])  # with and without the rule
    )
    data = client.get(base + ".json").json()
    assert set(data) == {"report", "parameters", "method", "results"}
    assert set(data["method"]) >= METHOD_KEYS
    pdf = client.get(base + ".pdf")
    assert pdf["Content-Type"] == "application/pdf" and pdf.content.startswith(b"%PDF")
    assert pdf_page_count(pdf.content) >= 3
    assert client.get(base + ".xlsx").status_code == 404


def test_names_with_dollars_and_formula_starts_are_drawn_and_exported_as_text(built):
    TaxonomyNode.objects.filter(kind="category", name__startswith="Clinical").update(
        name="Costs $^$ triage"
    )
    Judge.objects.filter(name="gpt-judge").update(name="=gpt$\\frac$")
    snap = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    figures = plots.svg_figures(snap.results)
    assert all(f["svg"] for f in figures)
    assert "Costs $^$ triage" in figures[0]["svg"]  # drawn as text, not as math
    assert services.export_pdf(snap).startswith(b"%PDF")
    rows = list(csv.DictReader(io.StringIO(services.export_csv(snap))))
    assert {r["column"] for r in rows} >= {"'=gpt$\\frac$"}
