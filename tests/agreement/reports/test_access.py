"""Who may open report pages, exports and API endpoints: study readers only."""

from __future__ import annotations

from rest_framework.test import APIClient

from agreement import services
from tests.factories import make_study_with_members

PARAMS = {"n_resamples": 60, "seed": 5}


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
        client.force_login(user)
        for url in urls:
            assert client.get(url).status_code == expected, (user, url)
        assert client.post(f"{base}{snap.pk}/recompute/").status_code == (
            302 if expected == 200 else expected
        )
    # a report of another study is not found through this study
    other_snap = services.create_snapshot(study=other.study, actor=None, parameters=PARAMS)
    client.logout()
    client.force_login(built.members.researcher)
    assert client.get(f"{base}{other_snap.pk}/").status_code == 404
    assert client.get(f"/studies/{other.study.pk}/agreement/{other_snap.pk}/").status_code == 404


def test_api_access(built, api_as):
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
        api = api_as(user)
        for url in urls:
            assert api.get(url).status_code == expected, (user, url)
        assert api.post(base, {"n_resamples": 20}, format="json").status_code == (
            202 if expected == 200 else expected
        )
