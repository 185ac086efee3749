"""The round page when there is nothing to answer, and who may see it."""

from __future__ import annotations

import pytest
from django.test import Client

from delphi import services
from tests.delphi.flow import make_panel_study
from tests.delphi.panel.pages import (
    client_for,
    draft_url,
    round_url,
)
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_a_round_that_is_not_open_shows_its_status(built):
    client = client_for(built.panelists[0].user)
    services.close_round(round_=built.round(1), actor=built.coordinator)
    page = client.get(round_url(built))
    assert page.status_code == 200
    assert "Round 1 is closed" in page.content.decode()
    assert 'id="questionnaire"' not in page.content.decode()
    # A form posted after the round closed is answered, not a 500.
    late = client.post(round_url(built), {"action": "save"})
    assert late.status_code == 409
    assert "not saved" in late.content.decode()
    draft = client.post(draft_url(built), "{}", content_type="application/json")
    assert draft.status_code == 400 and "round 1 is closed, not open" in draft.json()["error"]


def test_before_the_first_round_opens(db):
    built = make_panel_study(n_panelists=2)
    page = client_for(built.panelists[0].user).get(round_url(built))
    assert page.status_code == 200
    assert "No round has opened yet" in page.content.decode()


def test_access_outsiders_404_coordinators_403_anonymous_to_login(built):
    url = round_url(built)
    assert client_for(UserFactory(username="outsider")).get(url).status_code == 404
    assert client_for(built.coordinator).get(url).status_code == 403
    anonymous = Client().get(url)
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous.url
    withdrawn = built.panelists[5]
    services.withdraw_panelist(panelist=withdrawn, actor=built.coordinator)
    assert client_for(withdrawn.user).get(url).status_code == 404
