"""The panelist's home page: a round waiting for their answers is shown with their progress,
its closing time and a link to answer it; a submitted round says so."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.urls import reverse

from delphi import services
from tests.delphi.flow import BASE_URL, make_panel_study, submit_ratings
from tests.delphi.panel.pages import client_for, round_url

pytestmark = pytest.mark.django_db


def seat_text(html: str) -> str:
    match = re.search(r'<li[^>]*data-testid="panel-seat"[^>]*>(.*?)</li>', html, re.S)
    assert match, "no Delphi panel on the home page"
    return " ".join(re.sub(r"<[^>]+>", " ", match.group(1)).split())


def test_a_waiting_round_is_on_the_home_page_with_progress_and_deadline():
    built = make_panel_study(n_panelists=2)
    round1 = built.round(1)
    services.open_round(
        round_=round1,
        actor=built.coordinator,
        base_url=BASE_URL,
        closes_at=datetime(2031, 3, 14, 17, 30, tzinfo=UTC),
    )
    panelist = built.panelists[0]
    first = round1.items.order_by("position", "id").first()
    services.save_answers(panelist=panelist, round_=round1, answers={str(first.pk): {"rating": 7}})
    client = client_for(panelist.user)
    html = client.get(reverse("home")).content.decode()
    text = seat_text(html)
    n = round1.items.count()
    assert "round 1 is waiting for your answers" in text
    assert f"1 of {n} answered" in text
    assert "closes 2031-03-14 17:30 UTC" in text
    assert "Continue round 1" in text
    assert f'href="{round_url(built)}"' in html

    submit_ratings(panelist, round1, {})
    text = seat_text(client.get(reverse("home")).content.decode())
    assert "waiting" not in text
    assert "you submitted round 1; it is still open for the others" in text


def test_before_any_round_opens_the_home_page_says_so():
    built = make_panel_study(n_panelists=2)
    text = seat_text(client_for(built.panelists[0].user).get(reverse("home")).content.decode())
    assert "no round has opened yet" in text
