"""Issue 14 point 14 on stored reports: the demo's clinician-pair ICC of -20.7 is "not
estimable" with its reason in every output (page, PDF, CSV, JSON, API), the rule's
parameters are validated and stored with the snapshot, the method states the rule, the
sensitivity line gives the headline with and without it, and a report from before the rule
still renders, saying it was not applied."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.core.management import call_command
from django.utils.html import escape

from agreement import analysis, selectors, services
from agreement.errors import AgreementError
from agreement.models import ReportSnapshot
from agreement.stats import clinician_pairwise
from agreement.stats.medhelm.form_choice import TWOWAY
from tests.agreement.factories import demo_study_with_jury
from tests.agreement.reports.jobs import created_report
from tests.support.pdf import pdf_text

#: Which of the demo's rows are not estimable depends on their intervals' widths (the rule's
#: max_ci_width): that test keeps its resamples.
PARAMS = {"n_resamples": 100, "seed": 1}
#: Where the rule's statement, parameters and old reports are tested, not its verdicts.
FEW = {"n_resamples": 20, "seed": 1}


def _degenerate_rows(study) -> dict[str, float]:
    """Rows whose MedHELM clinician-clinician mean (no rule) lies below -1, with the value."""
    table = selectors.score_data(study=study, values="latest").table
    out = {}
    for _group, row, items in analysis.row_subsets(table):
        clin = table.loc[table["item"].isin(items) & (table["rater_kind"] == "clinician")]
        try:
            value = clinician_pairwise(clin, on_degenerate="drop").mean_icc
        except ValueError:
            continue
        if value < -1:
            out[row] = value
    return out


def _cell(cells, row, column=analysis.CLINICIAN_COLUMN, section="overall"):
    (found,) = [c for c in cells if (c["section"], c["row"], c["column"]) == (section, row, column)]
    return found


@pytest.fixture
def demo(db):
    return demo_study_with_jury()


def test_the_demo_rows_whose_pair_mean_was_minus_20_7_get_the_two_way_form_or_not_estimable(
    demo, client, api_as
):
    # The demo's design is incomplete (2 of 4 clinicians per item), so its clinician cells take
    # the two-way form (agreement.stats.medhelm.form_choice); the rows where MedHELM's pair
    # mean lies below -1 show a number inside [-1, 1] or "not estimable" with the reason, in
    # every output. (A pair mean outside [-1, 1] on a complete design: tests/agreement/stats.)
    degenerate = _degenerate_rows(demo)
    assert degenerate, "the demo data no longer reproduce a clinician mean below -1"
    snap = services.create_snapshot(study=demo, actor=None, parameters=PARAMS)
    researcher = demo.memberships.get(role="researcher").user
    client.force_login(researcher)
    base = f"/studies/{demo.pk}/agreement/{snap.pk}/"
    page = client.get(base).content.decode()
    table2 = re.search(r'data-testid="table2".*?</table>', page, re.S).group(0)
    differences = re.search(r'data-testid="differences".*?</table>', page, re.S).group(0)
    rows = list(csv.DictReader(io.StringIO(client.get(base + "report.csv").content.decode())))
    exported = client.get(base + "report.json").json()
    api = api_as(researcher).get(f"/api/studies/{demo.pk}/agreement/reports/{snap.pk}/").json()
    pdf = pdf_text(client.get(base + "report.pdf").content)
    not_estimable = 0
    for row in degenerate:
        cell = _cell(snap.results["cells"], row)
        assert cell["clinician_form"] == TWOWAY, (row, cell["clinician_form"])
        if cell["status"] == "ok":
            assert -1 <= cell["estimate"] <= 1, (row, cell["estimate"])
            continue
        not_estimable += 1
        reason = cell["reason"]
        assert cell["status"] == "not_estimable" and reason
        assert cell["estimate"] is None and cell["ci_low"] is None and cell["ci_high"] is None
        assert cell["band"] == analysis.NOT_ESTIMABLE
        # the page: "not estimable" and the reason in the cell, no number, interval or band
        tr = re.search(rf"<tr><th>(?:(?!</tr>).)*{re.escape(row)}</th>.*?</tr>", table2, re.S)
        td = tr.group(0).rsplit("<td", 1)[1]
        assert 'data-status="not_estimable"' in td and "not estimable" in td and reason in td
        assert "band" not in td and 'class="ci"' not in td
        # the jury minus clinician-clinician difference on that row
        (diff,) = [d for d in snap.results["differences"] if d["row"] == row]
        assert diff["status"] == "not_estimable" and diff["estimate"] is None
        assert f"{analysis.CLINICIAN_COLUMN} is not estimable: {reason}" in diff["reason"]
        diff_tr = next(t for t in differences.split("<tr>") if f"{row}</td>" in t)
        assert "<strong>not estimable</strong>" in diff_tr
        # CSV, JSON export, API
        (csv_row,) = [
            r
            for r in rows
            if (r["section"], r["row"], r["column"]) == ("overall", row, analysis.CLINICIAN_COLUMN)
        ]
        assert csv_row["status"] == "not_estimable" and reason in csv_row["reason"]
        assert csv_row["estimate"] == csv_row["ci_low"] == csv_row["ci_high"] == ""
        assert csv_row["band"] == analysis.NOT_ESTIMABLE
        for payload in (exported, api):
            got = _cell(payload["results"]["cells"], row)
            assert got["status"] == "not_estimable" and got["estimate"] is None
            assert reason in got["reason"]
        # the PDF's text (typeset from the page): "not estimable" and the reason
        assert f"not estimable {' '.join(reason.split())}" in " ".join(pdf.split())
    assert not_estimable, "no degenerate row is left not estimable: the output checks ran on none"
    # a cell inside the rule keeps its number (all items, here)
    assert _cell(snap.results["cells"], analysis.ROW_ALL)["status"] == "ok"
    assert "Sensitivity (all items; with the estimability rule" in pdf
    # the rule's name and its text (a page break may fall between them)
    rule_text = snap.method["estimability"]["text"]
    assert "Estimability rule" in pdf and " ".join(rule_text[:60].split()) in pdf


def test_method_and_sensitivity_line_in_every_output(built, client, api_as):
    snap = services.create_snapshot(
        study=built.study, actor=None, parameters={**FEW, "max_ci_width": 0.9}
    )
    rule = snap.method["estimability"]
    assert rule["applied"] is True and rule["max_ci_width"] == 0.9
    assert "wider than 0.9" in rule["text"] and "fewer than 2 shared items" in rule["text"]
    line = snap.results["sensitivity"]["line"]
    assert line.startswith("Sensitivity (all items; with the estimability rule / without it")
    entries = snap.results["sensitivity"]["entries"]
    assert [e["figure"] for e in entries][:5] == [c["column"] for c in snap.results["columns"]]
    client.force_login(built.members.researcher)
    base = f"/studies/{built.study.pk}/agreement/{snap.pk}/"
    page = client.get(base).content.decode()
    assert escape(rule["text"]) in page
    sensitivity = re.search(r'data-testid="sensitivity">(.*?)</p>', page, re.S).group(1)
    assert sensitivity.strip() == escape(line)
    rows = list(csv.DictReader(io.StringIO(client.get(base + "report.csv").content.decode())))
    sens = [r for r in rows if r["section"] == "sensitivity"]
    assert len(sens) == 2 * len(entries)
    assert {r["statistic"] for r in sens} == set(services.SENSITIVITY_STATISTICS.values())
    for payload in (
        client.get(base + "report.json").json(),
        api_as(built.members.researcher)
        .get(f"/api/studies/{built.study.pk}/agreement/reports/{snap.pk}/")
        .json(),
    ):
        assert payload["method"]["estimability"] == rule
        assert payload["results"]["sensitivity"]["line"] == line
    pdf = pdf_text(client.get(base + "report.pdf").content)
    # the rule's name and its text (a page break may fall between them)
    assert "Estimability rule" in pdf and " ".join(rule["text"][:60].split()) in pdf
    assert " ".join(line[:60].split()) in pdf


def test_the_rule_parameters_are_validated_and_stored(built, client, api_as):
    params = {**FEW, "max_ci_width": "0.8", "min_shared_items": 3}
    snap = services.create_snapshot(study=built.study, actor=None, parameters=params)
    assert (snap.parameters["max_ci_width"], snap.parameters["min_shared_items"]) == (0.8, 3)
    assert (snap.method["max_ci_width"], snap.method["estimability"]["min_shared_items"]) == (
        0.8,
        3,
    )
    again = services.recompute_snapshot(snapshot=snap, actor=None)
    assert again.parameters["max_ci_width"] == 0.8 and again.parameters["min_shared_items"] == 3
    for bad in (0, 2.5, "wide", float("nan")):
        with pytest.raises(AgreementError) as exc:
            services.create_snapshot(
                study=built.study, actor=None, parameters={**FEW, "max_ci_width": bad}
            )
        assert exc.value.field == "max_ci_width"
    api = api_as(built.members.researcher)
    url = f"/api/studies/{built.study.pk}/agreement/reports/"
    refused = api.post(url, {**FEW, "max_ci_width": 3}, format="json")
    assert refused.status_code == 400 and "max_ci_width" in refused.json()
    created = api.post(url, {**FEW, "max_ci_width": 0.7}, format="json")
    assert created_report(api, created)["parameters"]["max_ci_width"] == 0.7
    client.force_login(built.members.researcher)
    form = {"n_resamples": 20, "confidence": 0.95, "ci_method": "bca", "values": "latest"}
    before = ReportSnapshot.objects.count()
    bad = client.post(f"/studies/{built.study.pk}/agreement/", {**form, "max_ci_width": 5})
    assert bad.status_code == 200 and ReportSnapshot.objects.count() == before
    good = client.post(f"/studies/{built.study.pk}/agreement/", {**form, "max_ci_width": 0.6})
    assert good.status_code == 302
    assert ReportSnapshot.objects.latest("id").parameters["max_ci_width"] == 0.6
    out = io.StringIO()
    call_command(
        "agreement_report",
        study=built.study.pk,
        resamples=20,
        seed=2,
        max_ci_width=0.5,
        min_shared_items=4,
        stdout=out,
        stderr=io.StringIO(),
    )
    data = json.loads(out.getvalue())
    assert (data["parameters"]["max_ci_width"], data["parameters"]["min_shared_items"]) == (0.5, 4)


def test_a_report_from_before_the_rule_still_renders_saying_it_was_not_applied(
    built, client, api_as
):
    snap = services.create_snapshot(study=built.study, actor=None, parameters=FEW)
    # What a snapshot stored before the rule looks like: no rule parameter, method record,
    # sensitivity, or cell fields of the rule.
    new_keys = {"rule_codes", "n_pairs_excluded", "pairs_excluded"}
    old_results = {k: v for k, v in snap.results.items() if k != "sensitivity"}
    old_results["cells"] = [
        {k: v for k, v in c.items() if k not in new_keys} for c in snap.results["cells"]
    ]
    ReportSnapshot.objects.filter(pk=snap.pk).update(
        parameters={k: v for k, v in snap.parameters.items() if k != "max_ci_width"},
        method={k: v for k, v in snap.method.items() if k not in ("estimability", "max_ci_width")},
        results=old_results,
    )
    snap.refresh_from_db()
    client.force_login(built.members.researcher)
    base = f"/studies/{built.study.pk}/agreement/{snap.pk}/"
    page = client.get(base)
    assert page.status_code == 200
    html = page.content.decode()
    rule = re.search(r'data-testid="estimability-rule">(.*?)</dd>', html, re.S).group(1)
    assert rule.startswith("not applied: this report was computed before the estimability rule")
    assert "No sensitivity line: the estimability rule was not applied" in html
    assert services.export_json(snap)["method"]["estimability"] == {
        "applied": False,
        "text": analysis.RULE_NOT_APPLIED,
    }
    api = api_as(built.members.researcher)
    body = api.get(f"/api/studies/{built.study.pk}/agreement/reports/{snap.pk}/").json()
    assert body["method"]["estimability"]["applied"] is False
    assert "estimability" not in ReportSnapshot.objects.get(pk=snap.pk).method  # unchanged
    pdf = pdf_text(client.get(base + "report.pdf").content)
    # the rule's name and its text (a page break may fall between them)
    assert "Estimability rule" in pdf and "not applied: this report was computed before" in pdf
    assert "No sensitivity line" in pdf
    assert client.get(base + "report.csv").status_code == 200
