"""Joining a panel by a one-time invitation link, as a logged-in user or with a new account."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from delphi import services
from delphi.models import Panelist
from tests.delphi.flow import BASE_URL
from tests.delphi.panel.pages import (
    client_for,
    invite,
    round_url,
)
from tests.factories import TEST_PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


def test_logged_in_user_joins_with_one_click_and_the_link_is_spent(built):
    panelist, token = invite(built)
    user = UserFactory(username="dr-newcomer")
    client = client_for(user)
    url = reverse("delphi:join", kwargs={"token": token})

    page = client.get(url)
    assert page.status_code == 200
    text = page.content.decode()
    assert built.study.title in text and built.study.aims in text
    assert "pseudonymous" in text
    assert "Join as dr-newcomer" in text
    assert page.headers["Referrer-Policy"] == "same-origin"

    joined = client.post(url, {"action": "join"})
    assert joined.status_code == 302
    assert joined.url == round_url(built)
    panelist.refresh_from_db()
    assert panelist.user == user
    # Invited while round 1 was open: they answer it too.
    assert client.get(round_url(built)).status_code == 200

    again = client.get(url)
    assert again.status_code == 404
    assert "used already" in again.content.decode()


def test_new_account_is_created_logged_in_and_joined(built):
    panelist, token = invite(built)
    client = Client()
    url = reverse("delphi:join", kwargs={"token": token})
    page = client.get(url).content.decode()
    assert 'name="password2"' in page
    assert f"/accounts/login/?next=/delphi/join/{token}/" in page

    mismatch = client.post(
        url,
        {
            "action": "create",
            "username": "dr-fresh",
            "password1": "a-long-pass-phrase",
            "password2": "another-pass-phrase",
        },
    )
    assert mismatch.status_code == 400
    assert "two passwords differ" in mismatch.content.decode()
    assert 'value="dr-fresh"' in mismatch.content.decode(), "the username is kept"
    assert not Panelist.objects.filter(user__username="dr-fresh").exists()

    weak = client.post(
        url, {"action": "create", "username": "dr-fresh", "password1": "123", "password2": "123"}
    )
    assert weak.status_code == 400
    assert "password:" in weak.content.decode()

    created = client.post(
        url,
        {
            "action": "create",
            "username": "dr-fresh",
            "password1": "a-long-pass-phrase",
            "password2": "a-long-pass-phrase",
        },
    )
    assert created.status_code == 302
    panelist.refresh_from_db()
    assert panelist.user.username == "dr-fresh"
    # Logged in by the join itself.
    assert client.get(round_url(built)).status_code == 200


def test_used_renewed_and_unknown_tokens_get_a_clear_404(built):
    panelist, old = invite(built)
    new = services.renew_invitation(panelist=panelist, actor=built.coordinator, base_url=BASE_URL)
    client = Client()
    for token in (old, "not-a-token"):
        page = client.get(reverse("delphi:join", kwargs={"token": token}))
        assert page.status_code == 404
        assert "ask the study's" in page.content.decode()
    # A POST with a spent token changes nothing.
    client.post(reverse("delphi:join", kwargs={"token": old}), {"action": "create"})
    assert client.get(reverse("delphi:join", kwargs={"token": new})).status_code == 200


def test_join_refusals_are_shown_not_raised(built):
    _, token = invite(built)
    url = reverse("delphi:join", kwargs={"token": token})
    coordinator = client_for(built.coordinator)
    page = coordinator.post(url, {"action": "join"})
    assert page.status_code == 400
    assert "coordinator of the study cannot also be a panelist" in page.content.decode()
    anonymous = Client().post(url, {"action": "join"})
    assert anonymous.status_code == 400
    assert "log in first" in anonymous.content.decode()


def test_login_then_back_to_the_invitation(built):
    _, token = invite(built)
    UserFactory(username="dr-returning")
    join_url = reverse("delphi:join", kwargs={"token": token})
    client = Client()
    logged_in = client.post(
        "/accounts/login/",
        {"username": "dr-returning", "password": TEST_PASSWORD, "next": join_url},
    )
    assert logged_in.status_code == 302 and logged_in.url == join_url
    assert "Join as dr-returning" in client.get(join_url).content.decode()
