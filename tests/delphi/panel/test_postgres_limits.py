"""The panel's pages answer 400 with the reason when a posted text cannot be stored (a NUL,
a username or name longer than its column), on SQLite and on PostgreSQL alike, and keep
what was saved before. These inputs reach the services without a Django form."""

from __future__ import annotations

import html
import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from delphi import services
from delphi.models import Response, RoundItem, Suggestion
from medhelm_site.common.text_limits import column_max_length
from tests.delphi.panel.pages import client_for, draft_url, invite, item, round_url, suggest_url

pytestmark = pytest.mark.django_db

User = get_user_model()
USERNAME = column_max_length(User, "username")
ITEM_NAME = column_max_length(RoundItem, "name")


@pytest.mark.parametrize(
    ("username", "message"),
    [
        ("u" * (USERNAME + 1), f"username: is {USERNAME + 1} characters long; at most {USERNAME}"),
        ("dr\x00fresh", "username: contains a NUL character"),
    ],
    ids=["too-long", "nul"],
)
def test_the_join_page_refuses_a_username_the_database_cannot_store(built, username, message):
    panelist, token = invite(built)
    url = reverse("delphi:join", kwargs={"token": token})
    users = User.objects.count()
    client = Client()
    refused = client.post(
        url,
        {
            "action": "create",
            "username": username,
            "password1": "a-long-pass-phrase",
            "password2": "a-long-pass-phrase",
        },
    )
    assert refused.status_code == 400
    assert message in html.unescape(refused.content.decode())
    assert User.objects.count() == users
    assert client.get(url).status_code == 200, "the link still works"
    assert services.panelist_for_token(token) == panelist


def test_a_questionnaire_post_with_a_nul_comment_keeps_the_saved_draft(built):
    round1 = built.round(1)
    panelist = built.panelists[0]
    diagnosis, treatment = item(round1, "Diagnosis"), item(round1, "Treatment")
    client = client_for(panelist.user)
    saved = client.post(
        round_url(built),
        {f"item-{diagnosis.pk}-rating": "7", f"item-{diagnosis.pk}-comment": "kept"},
    )
    assert saved.status_code == 302
    refused = client.post(
        round_url(built),
        {
            f"item-{diagnosis.pk}-rating": "3",
            f"item-{treatment.pk}-rating": "5",
            f"item-{treatment.pk}-comment": "over\x00lap",
        },
    )
    assert refused.status_code == 400
    assert "answers[&#x27;Treatment&#x27;].comment: contains a NUL" in refused.content.decode()
    kept = Response.objects.get(panelist=panelist, round_item=diagnosis)
    assert (kept.rating, kept.comment) == (7, "kept")
    assert not Response.objects.filter(round_item=treatment).exists()


@pytest.mark.parametrize("text", ["over\x00lap", "over\ud800lap"], ids=["nul", "lone-surrogate"])
def test_the_autosave_refuses_a_comment_the_database_cannot_store(built, text):
    round1 = built.round(1)
    panelist = built.panelists[0]
    treatment = item(round1, "Treatment")
    reply = client_for(panelist.user).post(
        draft_url(built),
        # ensure_ascii: the surrogate travels as the JSON escape "\ud800", as a browser's would.
        json.dumps({"answers": {str(treatment.pk): {"rating": 5, "comment": text}}}),
        content_type="application/json",
    )
    assert reply.status_code == 400
    assert "answers['Treatment'].comment: contains" in reply.json()["error"]
    assert not Response.objects.filter(panelist=panelist).exists()


def test_the_suggestion_form_refuses_a_name_longer_than_an_item_name(built):
    round1 = built.round(1)
    client = client_for(built.panelists[0].user)
    refused = client.post(
        suggest_url(built),
        {
            "kind": "rename",
            "target": str(item(round1, "Billing").identity),
            "name": "n" * (ITEM_NAME + 1),
            "text": "clearer",
        },
    )
    assert refused.status_code == 400
    assert f"name: is {ITEM_NAME + 1} characters long" in refused.content.decode()
    nul = client.post(
        suggest_url(built),
        {"kind": "delete", "target": str(item(round1, "Billing").identity), "text": "no\x00"},
    )
    assert nul.status_code == 400
    assert "text: contains a NUL character" in nul.content.decode()
    assert not Suggestion.objects.exists()
