"""A researcher chooses the clinician-clinician form where a report is set up (the page's
form, the API, the command): it is validated naming the field and the allowed values, stored
with the snapshot, kept by a recomputation, used in every cell, and stated by the method,
the methods paragraph and Table 2's notes.

The built study is an incomplete design (2 of 4 clinicians per item), so the design alone
gives its clinician cells the one-way form: asking for MedHELM's pair mean changes them."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import call_command
from django.utils.html import escape

from agreement import analysis, services
from agreement.errors import AgreementError
from agreement.models import ReportSnapshot
from agreement.stats.medhelm import (
    ASKED_AGAINST_DESIGN,
    BY_DESIGN,
    CLINICIAN_FORMS,
    ONEWAY,
    PAIRWISE,
    REQUESTABLE_FORMS,
    TWOWAY,
)
from tests.agreement.reports.jobs import created_report

PARAMS = {"n_resamples": 20, "seed": 4}
ALLOWED = ", ".join(REQUESTABLE_FORMS)
FORM = {"n_resamples": 20, "seed": 4, "confidence": 0.95, "ci_method": "bca", "values": "latest"}


def _clinician_forms(snapshot: ReportSnapshot) -> set[str]:
    return {
        c["clinician_form"]
        for c in snapshot.results["cells"]
        if c["column_kind"] == "clinician" and c["clinician_form"] is not None
    }


def _method_text(html: str) -> str:
    return re.search(r'data-testid="clinician-form-method">(.*?)</dd>', html, re.S).group(1)


def test_by_default_the_design_decides_and_the_report_says_so(built, client):
    snap = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    assert snap.parameters["clinician_form"] == snap.method["clinician_form"] == BY_DESIGN
    assert snap.method["forms"]["clinician_clinician"] == analysis.CLINICIAN_FORM_RULE
    # the design's choice on this incomplete study: the two-way form (issue 21)
    assert TWOWAY in _clinician_forms(snap)
    client.force_login(built.members.researcher)
    page = client.get(f"/studies/{built.study.pk}/agreement/{snap.pk}/").content.decode()
    assert escape(analysis.CLINICIAN_FORM_RULE) in _method_text(page)
    # each two-way cell of the page's Table 2 (with a number, or not estimable) names its
    # form and why
    notes = re.findall(r'data-testid="clinician-form-note">(.*?)</div>', page, re.S)
    twoway = [
        c
        for c in snap.results["cells"]
        if (c["clinician_form"], c["column_kind"]) == (TWOWAY, "clinician")
        and c["status"] in ("ok", "not_estimable")
        and c["section"] in ("overall", "criterion")
    ]
    assert len(notes) == len(twoway) > 0
    assert all(
        n.startswith(f"clinician-clinician: {escape(CLINICIAN_FORMS[TWOWAY])}") for n in notes
    )


@pytest.mark.parametrize("asked", [PAIRWISE, TWOWAY, ONEWAY])
def test_a_form_asked_for_is_stored_used_in_every_cell_and_stated(built, asked):
    snap = services.create_snapshot(
        study=built.study, actor=None, parameters={**PARAMS, "clinician_form": asked}
    )
    assert snap.parameters["clinician_form"] == snap.method["clinician_form"] == asked
    assert _clinician_forms(snap) == {asked}
    assert {d["clinician_form"] for d in snap.results["differences"] if d["clinician_form"]} == {
        asked
    }
    stated = snap.method["forms"]["clinician_clinician"]
    assert stated == analysis.clinician_form_rule(asked) != analysis.CLINICIAN_FORM_RULE
    assert "in every cell, as the report asked" in stated
    paragraph = services.methods_text(snap)
    assert stated in paragraph
    # the pairs rule is stated only where pairs are averaged
    assert (snap.method["pairwise_rule"] in paragraph) is (asked == PAIRWISE)
    again = services.recompute_snapshot(snapshot=snap, actor=None)
    assert again.parameters["clinician_form"] == asked and _clinician_forms(again) == {asked}


def test_the_service_refuses_an_unknown_form_naming_the_field_and_the_choices(built):
    with pytest.raises(AgreementError) as exc:
        services.create_snapshot(
            study=built.study, actor=None, parameters={**PARAMS, "clinician_form": "icc2"}
        )
    assert exc.value.as_dict() == {"clinician_form": [f"must be one of {ALLOWED}, got 'icc2'"]}


def test_the_page_form_offers_the_forms_stores_the_choice_and_refuses_others(built, client):
    client.force_login(built.members.researcher)
    url = f"/studies/{built.study.pk}/agreement/"
    html = client.get(url).content.decode()
    select = re.search(r'<select name="clinician_form".*?</select>', html, re.S).group(0)
    assert re.findall(r'value="([^"]+)"', select) == list(REQUESTABLE_FORMS)
    assert re.search(r'value="design"[^>]*selected', select)
    refused = client.post(url, {**FORM, "clinician_form": "icc2"})
    assert refused.status_code == 200 and not ReportSnapshot.objects.exists()
    assert escape(f"must be one of {ALLOWED}, got 'icc2'") in refused.content.decode()
    response = client.post(url, {**FORM, "clinician_form": PAIRWISE})
    snap = ReportSnapshot.objects.get()
    assert response.status_code == 302 and snap.parameters["clinician_form"] == PAIRWISE
    assert f"<td>{PAIRWISE}</td>" in client.get(url).content.decode()
    page = client.get(f"{url}{snap.pk}/").content.decode()
    assert escape(analysis.clinician_form_rule(PAIRWISE)) in _method_text(page)
    # the cells the design would have given the one-way form say they were asked for
    assert escape(ASKED_AGAINST_DESIGN) in page
    # left out of the form (as older clients do): the design decides
    client.post(url, FORM)
    assert ReportSnapshot.objects.latest("id").parameters["clinician_form"] == BY_DESIGN


def test_the_api_takes_the_form_and_refuses_others_naming_the_choices(built, api_as):
    api = api_as(built.members.researcher)
    url = f"/api/studies/{built.study.pk}/agreement/reports/"
    refused = api.post(url, {**PARAMS, "clinician_form": "icc2"}, format="json")
    assert refused.status_code == 400
    assert refused.json() == {"clinician_form": [f"must be one of {ALLOWED}, got 'icc2'"]}
    body = created_report(api, api.post(url, {**PARAMS, "clinician_form": ONEWAY}, format="json"))
    assert body["parameters"]["clinician_form"] == body["method"]["clinician_form"] == ONEWAY
    assert body["method"]["forms"]["clinician_clinician"] == analysis.clinician_form_rule(ONEWAY)
    schemas = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()["components"][
        "schemas"
    ]
    field = schemas["CreateReport"]["properties"]["clinician_form"]
    ref = field.get("$ref") or next(iter(field.get("allOf", [])), {}).get("$ref")
    enum = schemas[ref.rsplit("/", 1)[-1]] if ref else field
    assert enum["enum"] == list(REQUESTABLE_FORMS)


def test_the_command_takes_the_form(built):
    out = io.StringIO()
    call_command(
        "agreement_report",
        study=built.study.pk,
        resamples=20,
        seed=2,
        clinician_form=PAIRWISE,
        stdout=out,
        stderr=io.StringIO(),
    )
    assert json.loads(out.getvalue())["parameters"]["clinician_form"] == PAIRWISE
