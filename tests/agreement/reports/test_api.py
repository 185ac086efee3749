"""The reports API: list, create, read, recompute, download; bad parameters are a 400.
Creating or recomputing answers 202 with the job's status URL, which names the report."""

from __future__ import annotations

import json

from tests.agreement.reports.jobs import created_report


def test_api_list_create_get_and_downloads(built, api_as):
    api = api_as(built.members.researcher)
    base = f"/api/studies/{built.study.pk}/agreement/reports/"
    created = api.post(
        base, {"n_resamples": 30, "seed": 9, "ci_method": "percentile"}, format="json"
    )
    body = created_report(api, created)
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
    assert created_report(api, again)["previous"] == body["id"]
    bad = api.post(base, {"n_resamples": 2, "confidence": 2}, format="json")
    assert bad.status_code == 400 and {"n_resamples", "confidence"} <= set(bad.json())


def test_api_schema_includes_the_report_endpoints(built, api_as):
    response = api_as(built.members.researcher).get("/api/schema/", HTTP_ACCEPT="application/json")
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
    assert "/api/studies/{study_id}/agreement/jobs/{job_id}/" in paths


def test_api_downloads_of_a_stored_report_do_not_read_its_results(built, api_as):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agreement.models import ReportSnapshot

    api = api_as(built.members.researcher)
    base = f"/api/studies/{built.study.pk}/agreement/reports/"
    report = created_report(api, api.post(base, {"n_resamples": 20, "seed": 2}, format="json"))
    results_column = f'"{ReportSnapshot._meta.db_table}"."results"'
    for path in (
        "csv/",
        "pdf/",
        "latex/",
        "markdown/",
        "figures/forest/svg/",
        "figures/forest/png/",
    ):
        with CaptureQueriesContext(connection) as queries:
            response = api.get(f"{base}{report['id']}/{path}")
        assert response.status_code == 200, (path, response.status_code)
        read = [q["sql"] for q in queries.captured_queries if results_column in q["sql"]]
        assert not read, (path, read)
