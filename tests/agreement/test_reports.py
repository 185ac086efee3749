"""Report snapshots, pages, exports, API and the management command.

The agreement URLs are mounted here through a urls override (this module is the urlconf),
until medhelm_site/urls.py includes them; then the override adds nothing.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.urls import include, path
from rest_framework.test import APIClient

import medhelm_site.urls as site_urls
from agreement import analysis, plots, services
from agreement import urls as agreement_urls
from agreement.errors import AgreementError
from agreement.models import ReportSnapshot
from annotation.models import Assignment, AuditEvent, Item
from tests.agreement.test_score_table import build_study, submit
from tests.factories import make_study_with_members

urlpatterns = list(site_urls.urlpatterns)
if not any(getattr(p, "namespace", None) == "agreement" for p in urlpatterns):
    urlpatterns += [
        path("studies/<int:study_id>/agreement/", include("agreement.urls")),
        path("api/studies/<int:study_id>/agreement/", include(agreement_urls.api)),
    ]

pytestmark = pytest.mark.urls("tests.agreement.test_reports")

PARAMS = {"n_resamples": 60, "seed": 5}
SECRET_NAMES = ("Zephyrine", "Quillfeather")


@pytest.fixture
def built(db):
    b = build_study(n_items=12, n_clinicians=4, leave_pending=2)
    # clinicians with names and e-mails that must never appear in a report
    User = get_user_model()
    for n, c in enumerate(b.members.clinicians):
        User.objects.filter(pk=c.pk).update(
            username=f"dr-hidden-{n}",
            email=f"hidden.clinician{n}@hospital.example",
            first_name=SECRET_NAMES[0],
            last_name=SECRET_NAMES[1],
        )
    return b


def login(client, user):
    client.force_login(user)
    return client


def api_client(user) -> APIClient:
    c = APIClient()
    c.force_authenticate(user)
    return c


def pdf_pages(data: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page(?!s)", data))


def forbidden_strings(built) -> list[str]:
    out = list(SECRET_NAMES)
    for user in get_user_model().objects.filter(pk__in=[c.pk for c in built.members.clinicians]):
        out += [user.username, user.email]
    return out


# --- snapshots -----------------------------------------------------------------------------


def test_a_snapshot_records_results_and_full_method(built):
    snap = services.create_snapshot(
        study=built.study, actor=built.members.researcher, parameters=PARAMS
    )
    snap.refresh_from_db()
    assert snap.parameters == {**services.DEFAULT_PARAMETERS, **PARAMS}
    m = snap.method
    assert m["forms"]["machine_vs_clinicians"] == (
        "ICC(3,k) k=2 on within-rater z-scored composites (MedHELM)"
    )
    assert m["ci_method"] == "bootstrap over items, BCa"
    assert (m["n_resamples"], m["seed"], m["confidence"]) == (60, 5, 0.95)
    assert m["n_raters"] == {"clinician": 4, "judge": 2, "jury": 1, "metric": 1}
    assert m["n_items"]["study"] == 12 and m["n_items"]["rated_by_clinicians"] == 12
    assert {"numpy", "scipy", "pandas", "django", "matplotlib"} <= set(m["package_versions"])
    assert m["created_at"] and m["pairwise_rule"] and m["per_criterion_metrics"]
    assert len(snap.input_hash) == 64 and snap.input_hash == m["input_hash"]
    r = snap.results
    assert [c["column"] for c in r["columns"]] == [
        "jury",
        "claude-judge",
        "gpt-judge",
        "rouge_l_f1",
        analysis.CLINICIAN_COLUMN,
    ]
    assert {c["section"] for c in r["cells"]} == {"overall", "criterion"}
    assert r["leaderboard"]["by_model"] and r["coverage"]["n_items_short"] == 2
    assert AuditEvent.objects.filter(action="report.create", target_id=str(snap.pk)).exists()
    json.dumps(r, allow_nan=False)  # strict JSON: no NaN anywhere


def test_a_missing_seed_is_drawn_and_recorded(built):
    snap = services.create_snapshot(study=built.study, actor=None, parameters={"n_resamples": 20})
    assert (
        isinstance(snap.parameters["seed"], int) and snap.method["seed"] == snap.parameters["seed"]
    )


def test_bad_parameters_are_refused(built):
    with pytest.raises(AgreementError) as exc:
        services.create_snapshot(
            study=built.study, actor=None, parameters={"n_resamples": 3, "confidence": 1.5}
        )
    assert set(exc.value.as_dict()) == {"n_resamples", "confidence"}


def test_a_snapshot_never_changes_and_recompute_shows_what_moved(built, client):
    snap = services.create_snapshot(
        study=built.study, actor=built.members.researcher, parameters=PARAMS
    )
    snap.refresh_from_db()
    stored = copy.deepcopy(snap.results)
    login(client, built.members.researcher)
    url = f"/studies/{built.study.pk}/agreement/{snap.pk}/"
    page_before = client.get(url).content.decode()
    table_before = re.search(r'data-testid="table2".*?</table>', page_before, re.S).group(0)

    # the pending assignments are submitted now: new ratings arrive
    raters = {c.pk: n for n, c in enumerate(built.members.clinicians)}
    index = {item.pk: i for i, item in enumerate(built.items)}
    for a in built.pending:
        a.refresh_from_db()
        submit(a, rater_index=raters[a.clinician_id] + 2, item_index=index[a.item_id] + 1)

    snap.refresh_from_db()
    assert snap.results == stored
    page_after = client.get(url).content.decode()
    assert re.search(r'data-testid="table2".*?</table>', page_after, re.S).group(0) == table_before

    fresh = services.recompute_snapshot(snapshot=snap, actor=built.members.researcher)
    assert fresh.previous_id == snap.pk and fresh.parameters["seed"] == snap.parameters["seed"]
    changes = fresh.results["changes"]
    assert changes["input_changed"] is True and changes["previous_input_hash"] == snap.input_hash
    assert changes["n_cells_moved"] > 0
    moved = changes["cells"][0]
    assert {"section", "row", "column", "previous", "current", "delta"} <= set(moved)
    assert fresh.input_hash != snap.input_hash

    again = services.recompute_snapshot(snapshot=fresh, actor=None)
    assert again.results["changes"]["input_changed"] is False
    assert again.results["changes"]["n_cells_moved"] == 0
    assert again.results["cells"] == fresh.results["cells"]
    assert "(recomputed" in again.title and again.title.count("(recomputed") == 1
    page = client.get(f"/studies/{built.study.pk}/agreement/{fresh.pk}/").content.decode()
    assert 'data-testid="changes"' in page and "score table changed" in page


# --- pages ---------------------------------------------------------------------------------


def test_reports_page_computes_a_new_report(built, client):
    login(client, built.members.researcher)
    url = f"/studies/{built.study.pk}/agreement/"
    page = client.get(url)
    assert page.status_code == 200 and 'data-testid="new-report"' in page.content.decode()
    assert 'value="1000"' in page.content.decode() and 'value="0.95"' in page.content.decode()
    response = client.post(
        url,
        {"n_resamples": 40, "seed": "", "confidence": 0.9, "ci_method": "percentile",
         "values": "latest", "title": "First look"},
    )  # fmt: skip
    snap = ReportSnapshot.objects.get(study=built.study)
    assert snap.parameters["min_shared_items"] == 2  # left out: the default
    assert response.status_code == 302 and response["Location"].endswith(f"/agreement/{snap.pk}/")
    assert snap.title == "First look" and snap.parameters["ci_method"] == "percentile"
    assert snap.created_by == built.members.researcher and isinstance(snap.parameters["seed"], int)
    listing = client.get(url).content.decode()
    assert "First look" in listing and str(snap.parameters["seed"]) in listing
    bad = client.post(
        url, {"n_resamples": 1, "confidence": 0.95, "ci_method": "bca", "values": "latest"}
    )
    assert bad.status_code == 200 and ReportSnapshot.objects.count() == 1


def test_the_report_page_has_every_section_and_inline_plots(built, client):
    snap = services.create_snapshot(
        study=built.study, actor=built.members.coordinator, parameters=PARAMS
    )
    login(client, built.members.coordinator)
    html = client.get(f"/studies/{built.study.pk}/agreement/{snap.pk}/").content.decode()
    for testid in ("report-head", "method", "table2", "per-criterion", "differences",
                   "leaderboard", "coverage", "plots"):  # fmt: skip
        assert f'data-testid="{testid}"' in html, testid
    for key in ("scatter", "bland_altman", "forest", "heatmap"):
        block = re.search(rf'data-testid="plot-{key}".*?</figure>', html, re.S).group(0)
        assert "<svg" in block, key
    assert "<script" not in html  # server-rendered, no JavaScript
    assert "bootstrap over items, BCa" in html and "seed 5" in html
    assert "R01" in html  # clinicians by pseudonym in the heat map
    cell = next(
        c for c in snap.results["cells"] if c["column"] == "jury" and c["row"] == analysis.ROW_ALL
    )
    assert plots.fmt(cell["estimate"]) in html


def test_text_in_model_names_is_escaped_everywhere(built, client):
    Item.objects.filter(pk=built.items[1].pk).update(model_name="<script>alert(1)</script>")
    snap = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    login(client, built.members.researcher)
    html = client.get(f"/studies/{built.study.pk}/agreement/{snap.pk}/").content.decode()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html


def test_recompute_button(built, client):
    snap = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    login(client, built.members.researcher)
    response = client.post(f"/studies/{built.study.pk}/agreement/{snap.pk}/recompute/")
    fresh = ReportSnapshot.objects.exclude(pk=snap.pk).get()
    assert response.status_code == 302 and fresh.previous == snap
    assert (
        client.get(f"/studies/{built.study.pk}/agreement/{snap.pk}/recompute/").status_code == 405
    )


# --- exports -------------------------------------------------------------------------------


def test_exports_csv_json_pdf(built, client):
    snap = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    login(client, built.members.researcher)
    base = f"/studies/{built.study.pk}/agreement/{snap.pk}/report"
    response = client.get(base + ".csv")
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert list(rows[0]) == services.CSV_COLUMNS == ["report", *analysis.CELL_COLUMNS]
    assert {r["section"] for r in rows} == {"overall", "criterion", "difference"}
    assert len(rows) == len(snap.results["cells"]) + len(snap.results["differences"])
    data = client.get(base + ".json").json()
    assert set(data) == {"report", "parameters", "method", "results"}
    assert {"forms", "pairwise_rule", "ci_method", "n_resamples", "seed", "confidence", "n_items",
            "n_raters", "package_versions", "created_at"} <= set(data["method"])  # fmt: skip
    pdf = client.get(base + ".pdf")
    assert pdf["Content-Type"] == "application/pdf" and pdf.content.startswith(b"%PDF")
    assert pdf_pages(pdf.content) >= 3
    assert client.get(base + ".xlsx").status_code == 404


def test_no_export_or_page_names_a_clinician(built, client):
    snap = services.create_snapshot(
        study=built.study, actor=built.members.researcher, parameters=PARAMS
    )
    login(client, built.members.researcher)
    base = f"/studies/{built.study.pk}/agreement/"
    first, lines = plots.report_lines(
        header=services.snapshot_header(snap), results=snap.results, method=snap.method
    )
    api = api_client(built.members.researcher)
    texts = {
        "list": client.get(base).content.decode(),
        "page": client.get(f"{base}{snap.pk}/").content.decode(),
        "csv": client.get(f"{base}{snap.pk}/report.csv").content.decode(),
        "json": client.get(f"{base}{snap.pk}/report.json").content.decode(),
        "api": api.get(
            f"/api/studies/{built.study.pk}/agreement/reports/{snap.pk}/"
        ).content.decode(),
        "api-list": api.get(f"/api/studies/{built.study.pk}/agreement/reports/").content.decode(),
        "svg": "".join(f["svg"] or "" for f in plots.svg_figures(snap.results)),
        "pdf-text": "\n".join(first + lines),
    }
    pdf = client.get(f"{base}{snap.pk}/report.pdf").content
    for secret in forbidden_strings(built):
        for name, text in texts.items():
            assert secret not in text, (secret, name)
        assert secret.encode() not in pdf
    # the pseudonyms are there instead
    assert "R01" in texts["page"] and "R01" in texts["json"] and "R01" in texts["pdf-text"]


# --- access --------------------------------------------------------------------------------


def test_access_to_pages_and_exports(built, client):
    snap = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    other = make_study_with_members(n_items=2, n_clinicians=2, name="Other study")
    base = f"/studies/{built.study.pk}/agreement/"
    urls = [base, f"{base}{snap.pk}/", f"{base}{snap.pk}/report.csv", f"{base}{snap.pk}/report.pdf"]
    for url in urls:
        assert client.get(url).status_code == 302  # anonymous: to the login page
    for user, expected in (
        (built.members.researcher, 200),
        (built.members.coordinator, 200),
        (built.members.clinicians[0], 403),
        (other.researcher, 404),
        (built.members.outsider, 404),
    ):
        client.logout()
        login(client, user)
        for url in urls:
            assert client.get(url).status_code == expected, (user, url)
        assert client.post(f"{base}{snap.pk}/recompute/").status_code == (
            302 if expected == 200 else expected
        )
    # a report of another study is not found through this study
    other_snap = services.create_snapshot(study=other.study, actor=None, parameters=PARAMS)
    client.logout()
    login(client, built.members.researcher)
    assert client.get(f"{base}{other_snap.pk}/").status_code == 404
    assert client.get(f"/studies/{other.study.pk}/agreement/{other_snap.pk}/").status_code == 404


# --- API -----------------------------------------------------------------------------------


def test_api_list_create_get_and_downloads(built):
    api = api_client(built.members.researcher)
    base = f"/api/studies/{built.study.pk}/agreement/reports/"
    created = api.post(
        base, {"n_resamples": 30, "seed": 9, "ci_method": "percentile"}, format="json"
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["parameters"]["seed"] == 9 and body["method"]["ci_method"].endswith("percentile")
    listing = api.get(base).json()
    assert listing["count"] == 1 and "results" not in listing["results"][0]
    one = api.get(f"{base}{body['id']}/").json()
    assert one["results"]["cells"] == body["results"]["cells"]
    csv_response = api.get(f"{base}{body['id']}/csv/", HTTP_ACCEPT="text/csv")
    assert csv_response.status_code == 200 and csv_response.content.startswith(b"report,section")
    pdf = api.get(f"{base}{body['id']}/pdf/")
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF")
    again = api.post(f"{base}{body['id']}/recompute/")
    assert again.status_code == 201 and again.json()["previous"] == body["id"]
    bad = api.post(base, {"n_resamples": 2, "confidence": 2}, format="json")
    assert bad.status_code == 400 and {"n_resamples", "confidence"} <= set(bad.json())


def test_api_access(built):
    snap = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    other = make_study_with_members(n_items=2, n_clinicians=2, name="Other study")
    base = f"/api/studies/{built.study.pk}/agreement/reports/"
    urls = [base, f"{base}{snap.pk}/", f"{base}{snap.pk}/csv/", f"{base}{snap.pk}/pdf/"]
    for url in urls:
        assert APIClient().get(url).status_code == 401
    for user, expected in (
        (built.members.coordinator, 200),
        (built.members.clinicians[0], 403),
        (other.researcher, 404),
    ):
        api = api_client(user)
        for url in urls:
            assert api.get(url).status_code == expected, (user, url)
        assert api.post(base, {"n_resamples": 20}, format="json").status_code == (
            201 if expected == 200 else expected
        )


def test_api_schema_includes_the_report_endpoints(built):
    api = api_client(built.members.researcher)
    response = api.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    paths = json.loads(response.content)["paths"]
    prefix = "/api/studies/{study_id}/agreement/reports/"
    for suffix in (
        "",
        "{report_id}/",
        "{report_id}/csv/",
        "{report_id}/pdf/",
        "{report_id}/recompute/",
    ):
        assert prefix + suffix in paths


# --- command -------------------------------------------------------------------------------


def test_command_computes_and_exports(built, tmp_path):
    out = io.StringIO()
    call_command("agreement_report", study=built.study.pk, resamples=30, seed=3, stdout=out,
                 stderr=io.StringIO())  # fmt: skip
    data = json.loads(out.getvalue())
    snap = ReportSnapshot.objects.get(pk=data["report"]["id"])
    assert snap.parameters["seed"] == 3 and snap.parameters["n_resamples"] == 30
    assert data["method"]["seed"] == 3
    target = tmp_path / "report.csv"
    call_command("agreement_report", "--study", str(built.study.pk), "--snapshot", str(snap.pk),
                 "--format", "csv", "--output", str(target), stderr=io.StringIO())  # fmt: skip
    assert target.read_text().startswith("report,section,row_group")
    assert ReportSnapshot.objects.count() == 1  # exporting a snapshot computes nothing
    pdf = tmp_path / "report.pdf"
    call_command("agreement_report", study=built.study.pk, snapshot=snap.pk, format="pdf",
                 output=pdf, stderr=io.StringIO())  # fmt: skip
    assert pdf.read_bytes().startswith(b"%PDF") and pdf_pages(pdf.read_bytes()) >= 3
    with pytest.raises(CommandError, match="--output"):
        call_command("agreement_report", study=built.study.pk, format="pdf")
    with pytest.raises(CommandError, match="no study"):
        call_command("agreement_report", study=999999)
    with pytest.raises(CommandError, match="no report snapshot"):
        call_command("agreement_report", study=built.study.pk, snapshot=999999)
    with pytest.raises(CommandError, match="invalid parameters"):
        call_command("agreement_report", study=built.study.pk, resamples=1, stderr=io.StringIO())


def test_a_study_without_ratings_still_gives_a_report(db):
    members = make_study_with_members(n_items=3, n_clinicians=2)
    snap = services.create_snapshot(study=members.study, actor=None, parameters=PARAMS)
    cells = snap.results["cells"]
    assert cells and all(c["status"] == "insufficient" and c["reason"] for c in cells)
    assert services.export_pdf(snap).startswith(b"%PDF")
    assert Assignment.objects.filter(study=members.study).exists()
