"""A stored report as CSV, JSON and PDF, with names drawn safely and cells that cannot act
as spreadsheet formulas. The report the downloads read is computed once for the module."""

from __future__ import annotations

import csv
import io

from django.urls import reverse

from agreement import analysis, plots, services
from delphi.models import TaxonomyNode
from jury.models import Judge

PARAMS = {"n_resamples": 20, "seed": 5}
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


def test_exports_csv_json_pdf(built, report, client, pdf_page_count):
    snap = report
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


def test_alpha_is_in_the_csv_json_and_page_beside_every_icc(built, report, client):
    snap = report
    client.force_login(built.members.researcher)
    base = f"/studies/{built.study.pk}/agreement/{snap.pk}/report"
    rows = list(csv.DictReader(io.StringIO(client.get(base + ".csv").content.decode())))
    cells = [r for r in rows if r["section"] in ("overall", "criterion") and r["status"] == "ok"]
    assert cells
    for row in cells:
        for level in ("interval", "ordinal"):
            assert -1.0 <= float(row[f"alpha_{level}"]) <= 1.0
    json_cells = client.get(base + ".json").json()["results"]["cells"]
    ok = [c for c in json_cells if c["status"] == "ok"]
    assert {(c["row"], c["column"]) for c in ok} == {(r["row"], r["column"]) for r in cells}
    for c in ok:
        assert c["alpha_interval"] is not None and c["alpha_ordinal"] is not None
    assert "alpha" in client.get(base + ".json").json()["method"]["forms"]
    page = client.get(reverse("agreement:report", args=[built.study.pk, snap.pk])).content.decode()
    shown = plots.fmt(ok[0]["alpha_interval"])
    assert page.count('data-testid="alpha"') == 2 * len(ok)
    assert shown in page and "\u03b1 ordinal" in page
