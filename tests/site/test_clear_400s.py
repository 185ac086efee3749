"""Requests a user can send by mistake (or on purpose) answer a clear 400, never a 500:
JSON nested too deeply in any API body, numbers past a float in the Delphi autosave,
ids that are not numbers, a huge `limit` or `offset` on API lists, and removing a clinician
when fewer than k would remain (issue 14, point 6)."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from annotation.models import Assignment, StudyMembership
from delphi import services as delphi_services
from delphi.models import Response as DelphiResponse
from medhelm_site.common.querying import MAX_PAGE_SIZE
from medhelm_site.common.rest import MAX_JSON_DEPTH
from tests.delphi.flow import BASE_URL, make_panel_study
from tests.factories import item_rows, make_study_with_members
from tests.support.assignments import assignment_ref

pytestmark = pytest.mark.django_db

# Deeper than Python's json module recurses (RecursionError), and a depth it parses.
FAR_TOO_DEEP = 100_000
JUST_TOO_DEEP = MAX_JSON_DEPTH + 1


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _json_client(user) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


@pytest.fixture
def open_panel():
    built = make_panel_study(n_panelists=1)
    delphi_services.open_round(round_=built.round(1), actor=built.coordinator, base_url=BASE_URL)
    return built


# --- JSON nested too deeply, in every API body ------------------------------------------


@pytest.mark.parametrize("depth", [FAR_TOO_DEEP, JUST_TOO_DEEP])
@pytest.mark.parametrize("endpoint", ["lock", "members", "reports", "draft", "submit"])
def test_an_api_body_nested_too_deeply_is_a_400(depth, endpoint):
    setup = make_study_with_members()
    study = setup.study.pk
    assignment = Assignment.objects.filter(clinician=setup.clinicians[0]).first()
    user, url = {
        "lock": (setup.coordinator, f"/api/studies/{study}/lock/"),
        "members": (setup.coordinator, f"/api/studies/{study}/members/"),
        "reports": (setup.coordinator, f"/api/studies/{study}/agreement/reports/"),
        "draft": (setup.clinicians[0], f"/api/assignments/{assignment_ref(assignment)}/draft/"),
        "submit": (setup.clinicians[0], f"/api/assignments/{assignment_ref(assignment)}/submit/"),
    }[endpoint]
    body = '{"answers": ' + _nested(depth) + "}"
    response = _json_client(user).post(url, body, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert "JSON nested too deeply" in response.json()["detail"]


@pytest.mark.parametrize("endpoint", ["login", "draft"])
def test_an_api_body_over_the_memory_limit_is_refused_before_it_is_parsed(endpoint, settings):
    # DRF before 3.17.2 parsed JSON from the raw stream, past DATA_UPLOAD_MAX_MEMORY_SIZE
    setup = make_study_with_members()
    assignment = Assignment.objects.filter(clinician=setup.clinicians[0]).first()
    user, url = {
        "login": (None, "/api/auth/login/"),
        "draft": (setup.clinicians[0], f"/api/assignments/{assignment_ref(assignment)}/draft/"),
    }[endpoint]
    client = _json_client(user) if user else Client(raise_request_exception=False)
    body = json.dumps({"username": "u", "password": "p", "answers": {"note": "x" * 3_000_000}})
    assert len(body) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    response = client.post(url, body, content_type="application/json")
    assert response.status_code in (400, 413), response.content[:300]
    assert b"credentials" not in response.content.lower()
    assert "x" * 1000 not in response.content.decode(errors="replace")


def test_the_closing_pages_beacon_nested_too_deeply_is_a_400():
    # A closing rating page sends its draft as a form field holding JSON.
    setup = make_study_with_members()
    assignment = Assignment.objects.filter(clinician=setup.clinicians[0]).first()
    response = _json_client(setup.clinicians[0]).post(
        f"/api/assignments/{assignment_ref(assignment)}/draft/", {"payload": _nested(FAR_TOO_DEEP)}
    )
    assert response.status_code == 400, response.content[:300]
    assert "JSON nested too deeply" in response.json()["payload"][0]


def test_the_delphi_autosave_nested_too_deeply_is_a_400_in_its_own_shape(open_panel):
    response = _json_client(open_panel.panelists[0].user).post(
        f"/delphi/{open_panel.study.pk}/round/draft/",
        '{"answers": ' + _nested(FAR_TOO_DEEP) + "}",
        content_type="application/json",
    )
    assert response.status_code == 400, response.content[:300]
    assert "JSON nested too deeply" in response.json()["error"]


# --- Infinity, NaN and numbers past a float in the Delphi autosave -----------------------


@pytest.mark.parametrize("number", ["1e400", "-1e400", "Infinity", "-Infinity", "NaN"])
@pytest.mark.parametrize("field", ["rating", "comprehensiveness"])
def test_the_delphi_autosave_refuses_numbers_that_are_not_finite(open_panel, number, field):
    panelist = open_panel.panelists[0]
    item = open_panel.round(1).items.first()
    if field == "rating":
        body = f'{{"answers": {{"{item.pk}": {{"rating": {number}}}}}}}'
    else:
        body = f'{{"answers": {{}}, "comprehensiveness": {number}}}'
    response = _json_client(panelist.user).post(
        f"/delphi/{open_panel.study.pk}/round/draft/", body, content_type="application/json"
    )
    assert response.status_code == 400, response.content[:300]
    error = response.json()["error"]
    assert field in error, error
    assert not DelphiResponse.objects.filter(panelist=panelist).exists()


# --- ids that are not numbers -----------------------------------------------------------


@pytest.mark.parametrize("membership", ["abc", "", "1.5", "-3", "1" * 30, "\u0663"])
def test_removing_a_member_by_an_id_that_is_not_a_number_is_a_400(client, membership):
    setup = make_study_with_members()
    client.force_login(setup.coordinator)
    response = client.post(
        f"/studies/{setup.study.pk}/members/", {"action": "remove", "membership": membership}
    )
    assert response.status_code == 400
    assert "membership must be an id" in response.content.decode()
    assert StudyMembership.objects.filter(study=setup.study, is_active=False).count() == 0


def test_removing_a_member_without_naming_one_is_a_400(client):
    setup = make_study_with_members()
    client.force_login(setup.coordinator)
    response = client.post(f"/studies/{setup.study.pk}/members/", {"action": "remove"})
    assert response.status_code == 400
    assert "membership is required" in response.content.decode()


# --- limit and offset on API lists ------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("limit=abc", 100),  # DRF's default page for a limit that is not a positive number
        ("limit=-5", 100),
        ("limit=0", 100),
        (f"limit={10**30}", MAX_PAGE_SIZE),
        (f"limit={MAX_PAGE_SIZE + 1}", MAX_PAGE_SIZE),
        (f"offset={10**30}", 0),
        (f"offset={2**63}&limit={2**63}", 0),
        ("offset=abc", 100),
    ],
)
def test_a_list_answers_a_bounded_page_whatever_limit_and_offset_say(query, expected):
    setup = make_study_with_members(n_items=0)
    from annotation import services

    services.create_items(
        study=setup.study, rows=item_rows(MAX_PAGE_SIZE + 5), actor=setup.coordinator
    )
    response = _json_client(setup.coordinator).get(f"/api/studies/{setup.study.pk}/items/?{query}")
    assert response.status_code == 200, response.content[:300]
    assert len(response.json()["results"]) == expected


# --- removing a clinician when fewer than k would remain --------------------------------

# The design's own message (annotation.design.DesignError, an AnnotationError).
BELOW_K = "k=2 ratings per item needs at least 2 raters, the study has 1"


def test_the_api_refuses_to_remove_a_clinician_below_k_and_changes_nothing():
    setup = make_study_with_members(n_clinicians=2, k=2)
    leaving = setup.clinicians[0]
    response = _json_client(setup.coordinator).delete(
        f"/api/studies/{setup.study.pk}/members/",
        json.dumps({"username": leaving.username, "role": "clinician"}),
        content_type="application/json",
    )
    assert response.status_code == 400, response.content[:300]
    assert response.json() == {"detail": [BELOW_K]}
    assert StudyMembership.objects.get(study=setup.study, user=leaving).is_active


def test_the_members_page_refuses_to_remove_a_clinician_below_k_and_says_why(client):
    setup = make_study_with_members(n_clinicians=2, k=2)
    leaving = StudyMembership.objects.get(study=setup.study, user=setup.clinicians[0])
    client.force_login(setup.coordinator)
    response = client.post(
        f"/studies/{setup.study.pk}/members/",
        {"action": "remove", "membership": str(leaving.pk)},
        follow=True,
    )
    assert response.status_code == 200
    assert BELOW_K in response.content.decode()
    leaving.refresh_from_db()
    assert leaving.is_active
