"""The sign-in pages when something is wrong before any provider answers: each ends on the
login page saying what (the full flow with a real provider is tests/e2e/test_sso.py)."""

from __future__ import annotations

import socket

import pytest

from medhelm_site.accounts.sso.config import forget_discovery

pytestmark = pytest.mark.django_db


@pytest.fixture
def sso_at_closed_port(settings):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    settings.MEDHELM_OIDC_CLIENT_ID = "site"
    settings.MEDHELM_OIDC_CLIENT_SECRET = "secret"
    settings.MEDHELM_OIDC_ISSUER = f"http://127.0.0.1:{port}/openid"
    settings.MEDHELM_OIDC_PROVIDER_NAME = "Hospital ID"
    forget_discovery()
    yield
    forget_discovery()


def _login_page_after(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/"
    return client.get("/accounts/login/").content.decode()


def test_a_provider_that_does_not_answer_is_named_on_the_login_page(client, sso_at_closed_port):
    page = _login_page_after(client, "/accounts/sso/start/")
    assert "Hospital ID cannot be reached right now" in page
    assert "Sign in with Hospital ID" in page


def test_an_answer_for_a_sign_in_this_browser_did_not_start_is_refused(client, sso_at_closed_port):
    page = _login_page_after(client, "/accounts/sso/callback/?code=abc&state=forged")
    assert "This sign-in was started in another window, or has expired" in page


def test_a_provider_error_is_shown(client, sso_at_closed_port):
    page = _login_page_after(
        client, "/accounts/sso/callback/?error=access_denied&error_description=Cancelled+by+user"
    )
    assert "Hospital ID did not sign you in (access_denied)." in page
    assert "Cancelled" not in page  # a link's free text is not shown on our page


def test_the_pages_do_not_exist_with_sso_off(client, settings):
    settings.MEDHELM_OIDC_CLIENT_ID = ""
    assert client.get("/accounts/sso/start/").status_code == 404
    assert client.get("/accounts/sso/callback/?code=a&state=b").status_code == 404
