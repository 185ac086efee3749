"""Who may open report pages, exports and API endpoints: study readers only.

The reports they open are computed once for the module, with their downloads stored (as a
report job stores them); a reader's request for a new report or a recomputation is queued
and answered at once, since what is tested here is who may ask, not the computing (that is
test_pages.py's, test_api.py's and test_background_jobs.py's)."""

from __future__ import annotations

import copy

import pytest
from rest_framework.test import APIClient

from agreement import services
from agreement.models import ReportSnapshot
from tests.factories import StudyWithMembers, make_study_with_members

PARAMS = {"n_resamples": 10, "seed": 5}


@pytest.fixture(autouse=True)
def requests_are_queued(reports_in_the_request, settings) -> None:
    settings.AGREEMENT_REPORTS_IN_BACKGROUND = True


@pytest.fixture(scope="module")
def reports_once(module_db, built_once) -> tuple[ReportSnapshot, StudyWithMembers, ReportSnapshot]:
    """A report of the module's study with its downloads stored (the job that computed it
    stored them), another study, and a report of that one."""
    with module_db():
        job = services.request_report(
            study=built_once.study, actor=None, parameters=PARAMS, background=False
        )
        other = make_study_with_members(n_items=2, n_clinicians=2, name="Other study")
        other_snap = services.create_snapshot(study=other.study, actor=None, parameters=PARAMS)
        return job.snapshot, other, other_snap


@pytest.fixture
def reports(built, reports_once) -> tuple[ReportSnapshot, StudyWithMembers, ReportSnapshot]:
    return copy.deepcopy(reports_once)


def test_access_to_pages_and_exports(built, reports, client):
    snap, other, other_snap = reports
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
        client.force_login(user)
        for url in urls:
            assert client.get(url).status_code == expected, (user, url)
        assert client.post(f"{base}{snap.pk}/recompute/").status_code == (
            302 if expected == 200 else expected
        )
    # a report of another study is not found through this study
    client.logout()
    client.force_login(built.members.researcher)
    assert client.get(f"{base}{other_snap.pk}/").status_code == 404
    assert client.get(f"/studies/{other.study.pk}/agreement/{other_snap.pk}/").status_code == 404


def test_api_access(built, reports, api_as):
    snap, other, _ = reports
    base = f"/api/studies/{built.study.pk}/agreement/reports/"
    urls = [base, f"{base}{snap.pk}/", f"{base}{snap.pk}/csv/", f"{base}{snap.pk}/pdf/"]
    for url in urls:
        assert APIClient().get(url).status_code == 401
    for user, expected in (
        (built.members.coordinator, 200),
        (built.members.clinicians[0], 403),
        (other.researcher, 404),
    ):
        api = api_as(user)
        for url in urls:
            assert api.get(url).status_code == expected, (user, url)
        assert api.post(base, {"n_resamples": 20}, format="json").status_code == (
            202 if expected == 200 else expected
        )
