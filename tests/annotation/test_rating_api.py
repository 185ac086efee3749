"""The rating API: the same rules as the services, answered as 4xx with field and reason."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.models import Assignment, Rating

FULL = {
    "accuracy": {"value": 4},
    "completeness": {"value": 3},
    "clarity": {"value": 5, "comment": "clear"},
}


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def mine(setup, i=0) -> Assignment:
    return Assignment.objects.filter(clinician=setup.clinicians[i]).order_by("position").first()


def test_submit_then_read_back(setup):
    a = mine(setup)
    client = api_for(setup.clinicians[0])
    r = client.post(
        f"/api/assignments/{a.handle}/submit/",
        {"answers": FULL, "time_spent_seconds": 30},
        format="json",
    )
    assert r.status_code == 200, r.json()
    assert r.json()["status"] == "submitted"
    got = client.get(f"/api/assignments/{a.handle}/").json()
    assert got["answers"]["clarity"] == {"value": 5, "cannot_assess": False, "comment": "clear"}


def test_retried_submit_is_idempotent(setup):
    a = mine(setup)
    client = api_for(setup.clinicians[0])
    for _ in range(3):
        assert (
            client.post(
                f"/api/assignments/{a.handle}/submit/", {"answers": FULL}, format="json"
            ).status_code
            == 200
        )
    assert Rating.objects.filter(assignment=a).count() == 3


@pytest.mark.parametrize(
    "payload,field,reason",
    [
        ({"answers": {**FULL, "accuracy": {"value": 9}}}, "accuracy", "outside the scale 1..5"),
        ({"answers": {**FULL, "accuracy": {"value": 2.5}}}, "accuracy", "whole number"),
        ({"answers": {**FULL, "tone": {"value": 2}}}, "tone", "unknown criterion"),
        ({"answers": {"accuracy": {"value": 2}}}, "completeness", "missing"),
        ({"answers": "not an object"}, "answers", ""),
        ({"nothing": 1}, "answers", "required"),
        ({"answers": FULL, "time_spent_seconds": -4}, "time_spent_seconds", ""),
    ],
)
def test_bad_submissions_get_400_naming_the_field_and_save_nothing(setup, payload, field, reason):
    a = mine(setup)
    r = api_for(setup.clinicians[0]).post(
        f"/api/assignments/{a.handle}/submit/", payload, format="json"
    )
    assert r.status_code == 400
    body = r.json()
    assert field in body, body
    assert reason in str(body[field])
    assert not Rating.objects.filter(assignment=a).exists()


def test_malformed_json_is_a_400(setup):
    a = mine(setup)
    r = api_for(setup.clinicians[0]).post(
        f"/api/assignments/{a.handle}/submit/", data="{not json", content_type="application/json"
    )
    assert r.status_code == 400 and "JSON parse error" in r.json()["detail"]


def test_someone_elses_assignment_is_404_and_untouched(setup):
    theirs = mine(setup, 1)
    for url in ("", "draft/", "submit/", "flag/"):
        method = "get" if url == "" else "post"
        r = getattr(api_for(setup.clinicians[0]), method)(
            f"/api/assignments/{theirs.handle}/{url}",
            {"answers": FULL, "flagged": True, "reason": "x"},
            format="json",
        )
        assert r.status_code == 404, url
    assert not Rating.objects.exists()


def test_an_assignment_id_is_no_address(setup, client):
    """A rater reaches their own assignment by its handle only: by its id (which follows
    import order) every page and endpoint answers 404 and nothing changes."""
    a = mine(setup)
    api = api_for(setup.clinicians[0])
    for url in ("", "draft/", "submit/", "flag/"):
        method = "get" if url == "" else "post"
        payload = {"answers": FULL, "flagged": True, "reason": "x"}
        r = getattr(api, method)(f"/api/assignments/{a.pk}/{url}", payload, format="json")
        assert r.status_code == 404, url
    client.force_login(setup.clinicians[0])
    assert client.get(f"/studies/{setup.study.pk}/rate/{a.pk}/").status_code == 404
    assert client.get(f"/studies/{setup.study.pk}/rate/{a.handle}/").status_code == 200
    assert not Rating.objects.exists()


def test_coordinator_and_researcher_cannot_rate(setup):
    a = mine(setup)
    for user in (setup.coordinator, setup.researcher, setup.outsider):
        r = api_for(user).post(
            f"/api/assignments/{a.handle}/submit/", {"answers": FULL}, format="json"
        )
        assert r.status_code == 404


def test_locked_study_answers_400_with_the_reason(setup):
    a = mine(setup)
    lock = api_for(setup.coordinator).post(
        f"/api/studies/{setup.study.pk}/lock/", {"locked": True}, format="json"
    )
    assert lock.status_code == 200 and lock.json()["is_locked"] is True
    r = api_for(setup.clinicians[0]).post(
        f"/api/assignments/{a.handle}/submit/", {"answers": FULL}, format="json"
    )
    assert r.status_code == 400 and "locked" in str(r.json()["study"])
    assert (
        api_for(setup.clinicians[0])
        .post(f"/api/studies/{setup.study.pk}/lock/", {"locked": False}, format="json")
        .status_code
        == 403
    )


def test_draft_autosave_and_closing_page_beacon(setup):
    a = mine(setup)
    client = api_for(setup.clinicians[0])
    r = client.put(
        f"/api/assignments/{a.handle}/draft/",
        {"answers": {"accuracy": {"value": 2}}, "time_spent_seconds": 3},
        format="json",
    )
    assert r.status_code == 200 and r.json()["status"] == "in_progress"
    # a closing page sends its last draft as a form field
    import json

    r = client.post(
        f"/api/assignments/{a.handle}/draft/",
        {"payload": json.dumps({"answers": {"accuracy": {"value": 3}}})},
    )
    assert r.status_code == 200
    assert Rating.objects.get(assignment=a, criterion__key="accuracy").value == 3


def test_a_draft_to_a_submitted_assignment_is_refused_unless_it_changes_nothing(setup):
    """The autosave of a submitted item never answers as if it had saved a change."""
    a = mine(setup)
    client = api_for(setup.clinicians[0])
    submit = client.post(f"/api/assignments/{a.handle}/submit/", {"answers": FULL}, format="json")
    assert submit.status_code == 200
    r = client.put(
        f"/api/assignments/{a.handle}/draft/",
        {"answers": {**FULL, "accuracy": {"value": 1}}, "time_spent_seconds": 3},
        format="json",
    )
    assert r.status_code == 400
    assert "submitted" in " ".join(r.json()["answers"]) and "accuracy" in str(r.json())
    assert Rating.objects.get(assignment=a, criterion__key="accuracy").value == 4
    # A time-only draft is how the page reports time spent on a revision.
    spent = Assignment.objects.get(pk=a.pk).time_spent_seconds
    r = client.put(
        f"/api/assignments/{a.handle}/draft/",
        {"answers": {}, "time_spent_seconds": 3},
        format="json",
    )
    assert r.status_code == 200 and r.json()["status"] == "submitted"
    assert r.json()["answers"]["accuracy"]["value"] == 4
    assert Assignment.objects.get(pk=a.pk).time_spent_seconds == spent + 3


def test_exports_in_long_format_with_pseudonyms_only(setup):
    from annotation import services

    a = mine(setup)
    clinician = setup.clinicians[0]
    api_for(clinician).post(
        f"/api/assignments/{a.handle}/submit/", {"answers": FULL}, format="json"
    )
    api_for(clinician).post(
        f"/api/assignments/{a.handle}/submit/",
        {"answers": {**FULL, "accuracy": {"value": 1, "comment": "dose"}}},
        format="json",
    )
    latest = api_for(setup.researcher).get(f"/api/studies/{setup.study.pk}/ratings/").json()
    first = (
        api_for(setup.researcher).get(f"/api/studies/{setup.study.pk}/ratings/?values=first").json()
    )
    acc_latest = next(r for r in latest["rows"] if r["criterion"] == "accuracy")
    acc_first = next(r for r in first["rows"] if r["criterion"] == "accuracy")
    assert (acc_latest["value"], acc_first["value"]) == (1, 4) and acc_latest["revised"] is True
    assert len(latest["rows"]) == 3
    rater = acc_latest["rater"]
    assert (
        rater.startswith("R")
        and clinician.username not in str(latest)
        and clinician.email not in str(latest)
    )
    assert services is not None
    # clinicians may not export
    assert api_for(clinician).get(f"/api/studies/{setup.study.pk}/ratings/").status_code == 403


def test_items_with_model_names_are_for_coordinators_only(setup):
    assert (
        api_for(setup.coordinator).get(f"/api/studies/{setup.study.pk}/items/").status_code == 200
    )
    assert (
        api_for(setup.clinicians[0]).get(f"/api/studies/{setup.study.pk}/items/").status_code == 403
    )
    assert api_for(setup.researcher).get(f"/api/studies/{setup.study.pk}/items/").status_code == 403
