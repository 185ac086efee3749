"""Sessions end after SESSION_IDLE_SECONDS without a request; logging out tells the browser
to drop the site's stored drafts."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth import SESSION_KEY
from django.urls import reverse

from medhelm_site.accounts.middleware import LAST_SEEN

pytestmark = pytest.mark.django_db


def _age_session(client, seconds: int) -> None:
    session = client.session
    session[LAST_SEEN] = int(time.time()) - seconds
    session.save()


def test_idle_time_defaults_to_thirty_minutes_and_bounds_the_cookie(settings):
    assert settings.SESSION_IDLE_SECONDS == 30 * 60
    assert settings.SESSION_COOKIE_AGE == settings.SESSION_IDLE_SECONDS


def test_session_ends_after_the_idle_time(client, member):
    client.force_login(member)
    assert client.get(reverse("home")).status_code == 200
    assert LAST_SEEN in client.session
    _age_session(client, 30 * 60 + 1)
    response = client.get(reverse("home"), follow=True)
    assert response.redirect_chain[0][0].startswith(reverse("login"))
    assert "logged out after 30 minutes without activity" in response.content.decode()
    assert SESSION_KEY not in client.session


def test_activity_within_the_idle_time_keeps_the_session(client, member):
    client.force_login(member)
    client.get(reverse("home"))
    _age_session(client, 29 * 60)
    assert client.get(reverse("home")).status_code == 200
    # ... and that request renewed it: the last-seen time moved to now.
    assert int(time.time()) - client.session[LAST_SEEN] < 5
    assert client.cookies["sessionid"]["max-age"] == 30 * 60


def test_recent_activity_is_not_written_on_every_request(client, member):
    client.force_login(member)
    client.get(reverse("home"))
    _age_session(client, 10)
    before = client.session[LAST_SEEN]
    assert client.get(reverse("home")).status_code == 200
    assert client.session[LAST_SEEN] == before


def test_idle_time_is_configurable(client, member, settings):
    settings.SESSION_IDLE_SECONDS = 120
    client.force_login(member)
    client.get(reverse("home"))
    _age_session(client, 121)
    assert client.get(reverse("home")).status_code == 302


def test_api_token_requests_are_not_sessions(client, member, study_with_members):
    from medhelm_site.accounts.services import create_token

    _, secret = create_token(user=member)
    url = f"/api/studies/{study_with_members.study.pk}/queue/"
    assert client.get(url, HTTP_AUTHORIZATION=f"Token {secret}").status_code == 200
    assert "sessionid" not in client.cookies


def test_logout_sends_clear_site_data_and_the_login_page_clears_drafts(client, member):
    client.force_login(member)
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert response["Location"] == reverse("login") + "?logged_out=1"
    assert response["Clear-Site-Data"] == '"storage"'
    assert SESSION_KEY not in client.session
    page = client.get(response["Location"]).content.decode()
    assert "accounts/logged_out.js" in page and "You are logged out." in page
    assert "accounts/logged_out.js" not in client.get(reverse("login")).content.decode()
    assert client.get(reverse("logout")).status_code == 405  # a link cannot log you out
