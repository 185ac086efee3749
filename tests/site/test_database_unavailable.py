"""A database outage is a 503 saying so, with Retry-After, whether a view or a middleware
(the session being loaded) met it: JSON for the API and the pages' fetches, a short page
otherwise; never Django's 500 page. Against a real restart: test_database_restart.py."""

from __future__ import annotations

import pytest
from django.contrib.sessions.backends.db import SessionStore
from django.db import InterfaceError, OperationalError
from django.test import Client

from annotation import api
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def raising(error: Exception):
    def raise_it(*_args, **_kwargs):
        raise error

    return raise_it


@pytest.fixture
def signed_in(settings) -> Client:
    settings.DEBUG = False  # production's error handling: handler500, not the debug page
    client = Client(raise_request_exception=False)
    client.force_login(UserFactory())
    return client


@pytest.mark.parametrize(
    "error",
    [OperationalError("server closed the connection"), InterfaceError("connection already closed")],
)
def test_an_api_view_meeting_an_outage_answers_503_json(signed_in, monkeypatch, error):
    monkeypatch.setattr(api.MyStudiesApi, "get", raising(error))
    response = signed_in.get("/api/studies/")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert "database is unavailable" in response.json()["detail"]


def test_a_page_whose_session_cannot_be_loaded_answers_503(signed_in, monkeypatch):
    monkeypatch.setattr(SessionStore, "load", raising(OperationalError("connection refused")))
    response = signed_in.get("/")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response["Content-Type"].startswith("text/html")
    assert b"Database unavailable" in response.content


def test_other_errors_stay_500(signed_in, monkeypatch):
    monkeypatch.setattr(api.MyStudiesApi, "get", raising(ValueError("a bug")))
    assert signed_in.get("/api/studies/").status_code == 500


def test_the_page_links_back_to_the_same_address_escaped(signed_in, monkeypatch):
    monkeypatch.setattr(SessionStore, "load", raising(OperationalError("connection refused")))
    response = signed_in.get('/studies/?q="><script>x</script>')
    body = response.content.decode()
    assert response.status_code == 503
    assert '<a href="/studies/?q=%22%3E%3Cscript%3Ex%3C/script%3E">Open this page again</a>' in body
    assert "<script>" not in body
    assert "not saved: send it again" not in body  # a page load sent nothing


def test_a_posted_form_is_told_to_send_again(signed_in, monkeypatch):
    monkeypatch.setattr(SessionStore, "load", raising(OperationalError("connection refused")))
    response = signed_in.post("/studies/1/rate/abc/", {"c-accuracy": "4"})
    body = response.content.decode()
    assert response.status_code == 503
    assert '<a href="/studies/1/rate/abc/">Open this page again</a>' in body
    assert "What you sent was not saved: send it again from there." in body
