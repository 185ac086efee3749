"""The questionnaire's autosave endpoint (delphi.api.DraftApi): what it saves and returns,
what it refuses and with which status, and its CSRF check."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from delphi.models import PanelistRound, Response
from tests.delphi.panel.pages import (
    client_for,
    draft_url,
    item,
    round_url,
)
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_draft_endpoint_saves_and_returns_the_version(built):
    round1 = built.round(1)
    panelist = built.panelists[0]
    diagnosis = item(round1, "Diagnosis")
    client = client_for(panelist.user)
    reply = client.post(
        draft_url(built),
        json.dumps(
            {
                "round": 1,
                "answers": {str(diagnosis.pk): {"rating": 7, "comment": "fine"}},
                "comprehensiveness": 3,
            }
        ),
        content_type="application/json",
    )
    assert reply.status_code == 200, reply.content
    data = reply.json()
    saved = Response.objects.get(panelist=panelist, round_item=diagnosis)
    assert (saved.rating, saved.comment, saved.is_draft) == (7, "fine", True)
    assert data["updated_at_ms"] == int(saved.updated_at.timestamp() * 1000)
    assert data["saved_at"]
    assert PanelistRound.objects.get(panelist=panelist, round=round1).comprehensiveness == 3
    # The page carries the same version for the browser's local copy.
    page = client.get(round_url(built)).content.decode()
    assert f'data-updated="{data["updated_at_ms"]}"' in page
    assert re.search(rf'name="item-{diagnosis.pk}-rating" value="7" checked', page), (
        "the draft is rendered"
    )


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"rating": 12}, "answers['Treatment'].rating: must be a whole number 1-9, got 12"),
        ({"rating": 5, "unable": True}, "answers['Treatment']: give a rating or 'unable"),
        ({"placement_agrees": "perhaps"}, "answers['Treatment'].placement_agrees"),
        ({"colour": "red"}, "answers['Treatment']: unknown key(s) ['colour']"),
    ],
)
def test_draft_endpoint_refuses_a_bad_answer_names_the_item_and_saves_nothing(
    built, answer, message
):
    round1 = built.round(1)
    panelist = built.panelists[0]
    good, bad = item(round1, "Diagnosis"), item(round1, "Treatment")
    reply = client_for(panelist.user).post(
        draft_url(built),
        json.dumps({"answers": {str(good.pk): {"rating": 6}, str(bad.pk): answer}}),
        content_type="application/json",
    )
    assert reply.status_code == 400
    assert message in reply.json()["error"]
    assert not Response.objects.filter(panelist=panelist).exists(), "all or nothing"


def test_draft_endpoint_refuses_malformed_requests(built):
    client = client_for(built.panelists[0].user)
    url = draft_url(built)
    assert client.post(url, "{not json", content_type="application/json").status_code == 400
    assert client.post(url, "[1]", content_type="application/json").status_code == 400
    unknown = client.post(url, json.dumps({"answer": {}}), content_type="application/json")
    assert unknown.status_code == 400 and "answer" in unknown.json()["error"]
    no_such = client.post(
        url, json.dumps({"answers": {"999999": {"rating": 5}}}), content_type="application/json"
    )
    assert no_such.status_code == 400 and "no such item in round 1" in no_such.json()["error"]
    stale = client.post(
        url, json.dumps({"round": 2, "answers": {}}), content_type="application/json"
    )
    assert stale.status_code == 409 and "reload the page" in stale.json()["error"]
    assert client.get(url).status_code == 405
    assert Client().post(url, "{}", content_type="application/json").status_code == 401
    outsider = client_for(UserFactory(username="outsider"))
    assert outsider.post(url, "{}", content_type="application/json").status_code == 404
    coordinator = client_for(built.coordinator)
    assert coordinator.post(url, "{}", content_type="application/json").status_code == 403


def test_draft_endpoint_needs_the_csrf_token(built):
    client = Client(enforce_csrf_checks=True)
    client.force_login(built.panelists[0].user)
    refused = client.post(draft_url(built), "{}", content_type="application/json")
    assert refused.status_code == 403
    client.get(round_url(built))  # sets the cookie the page's script reads
    token = client.cookies["csrftoken"].value
    accepted = client.post(
        draft_url(built), "{}", content_type="application/json", HTTP_X_CSRFTOKEN=token
    )
    assert accepted.status_code == 200


def test_draft_endpoint_answers_non_numeric_ids_with_a_400(built):
    client = client_for(built.panelists[0].user)
    url = draft_url(built)
    for body in (
        {"answers": {"not-an-id": {"rating": 5}}},
        {"round": "first", "answers": {}},
        {"answers": ["not", "an", "object"]},
    ):
        reply = client.post(url, json.dumps(body), content_type="application/json")
        assert reply.status_code == 400, body
        assert reply.json()["error"], body
    assert not Response.objects.exists()
