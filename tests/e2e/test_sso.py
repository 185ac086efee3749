"""Single sign-on through a real OpenID provider: a second Django site running
django-oidc-provider as its own HTTP server process (tests/support/oidc_provider/), signed
in at through Chromium with the full authorization-code flow."""

from __future__ import annotations

import copy
import re

import pytest
from axes.models import AccessAttempt, AccessLog
from django.contrib.auth import get_user_model

from annotation.models import AuditEvent
from medhelm_site.accounts.sso.config import forget_discovery
from tests.factories import TEST_PASSWORD
from tests.support.browser import log_in
from tests.support.oidc_provider.server import ProviderUser, running_provider

PROVIDER_NAME = "Test Hospital ID"
PROVIDER_PASSWORD = "provider-password-9431"
ALICE = ProviderUser("alice", "alice@hospital.example", PROVIDER_PASSWORD, email_verified=True)
VICTOR = ProviderUser("victor", "victor@hospital.example", PROVIDER_PASSWORD, email_verified=False)
UMA = ProviderUser("uma", "uma@elsewhere.example", PROVIDER_PASSWORD, email_verified=True)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def provider(live_server, tmp_path_factory):
    with running_provider(
        workdir=tmp_path_factory.mktemp("oidc-provider"),
        redirect_uris=[live_server.url + "/accounts/sso/callback/"],
        post_logout_redirect_uris=[live_server.url + "/accounts/login/?logged_out=1"],
        users=[ALICE, VICTOR, UMA],
    ) as running:
        yield running


@pytest.fixture
def sso_on(settings, provider):
    settings.MEDHELM_OIDC_CLIENT_ID = provider.client_id
    settings.MEDHELM_OIDC_CLIENT_SECRET = provider.client_secret
    settings.MEDHELM_OIDC_ISSUER = provider.issuer
    settings.MEDHELM_OIDC_PROVIDER_NAME = PROVIDER_NAME
    # As medhelm_site.settings.identity does for a configured issuer: the logout form may
    # end at the provider.
    policy = copy.deepcopy(settings.CONTENT_SECURITY_POLICY)
    policy["DIRECTIVES"]["form-action"].append(provider.url)
    settings.CONTENT_SECURITY_POLICY = policy
    forget_discovery()
    yield provider
    forget_discovery()


@pytest.fixture
def local_users(transactional_db):
    users = get_user_model().objects
    return {
        "alice": users.create_user("alice.local", "Alice@Hospital.example", TEST_PASSWORD),
        "victor": users.create_user("victor.local", VICTOR.email, TEST_PASSWORD),
    }


def sign_in_at_provider(page, live_server, who: ProviderUser) -> None:
    page.goto(live_server.url + "/accounts/login/")
    page.get_by_role("link", name=f"Sign in with {PROVIDER_NAME}").click()
    page.wait_for_url(re.compile(r"http://127\.0\.0\.1:\d+/login/"))
    page.fill("#id_username", who.username)
    page.fill("#id_password", who.password)
    page.click("text=Sign in at the provider")


def test_verified_email_signs_in_as_the_local_account(live_server, page, sso_on, local_users):
    violations: list[str] = []
    page.on(
        "console",
        lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None,
    )
    page.goto(live_server.url + "/accounts/login/")
    page.screenshot(path="/tmp/i18-sso-login.png", full_page=True)
    sign_in_at_provider(page, live_server, ALICE)
    page.wait_for_url(live_server.url + "/")
    assert page.inner_text(".who") == "alice.local"
    page.screenshot(path="/tmp/i18-sso-signed-in.png", full_page=True)
    event = AuditEvent.objects.get(action="account.sso_login")
    assert event.target_id == str(local_users["alice"].pk)
    assert event.after == {"provider": PROVIDER_NAME, "email": ALICE.email, "created": False}
    # django-axes' access log lists it beside the password logins.
    assert AccessLog.objects.filter(
        username="alice.local", path_info="/accounts/sso/callback/"
    ).exists()
    assert violations == []


def test_unverified_email_is_refused(live_server, page, sso_on, local_users):
    sign_in_at_provider(page, live_server, VICTOR)
    page.wait_for_url(re.compile(r"/accounts/login/"))
    refusal = page.inner_text("[data-testid=sso-refusal]")
    assert f"{PROVIDER_NAME} has not verified your e-mail address {VICTOR.email}" in refusal
    page.screenshot(path="/tmp/i18-sso-unverified.png", full_page=True)
    page.goto(live_server.url + "/")
    assert "/accounts/login/" in page.url  # not signed in
    event = AuditEvent.objects.get(action="account.sso_refused")
    assert event.after["reason"] == "email_not_verified"
    # No password was guessed: the login throttle counts nothing (else five refusals would
    # lock every sign-in from this address).
    assert not AccessAttempt.objects.exists()


def test_unknown_email_is_refused_and_no_account_is_made(live_server, page, sso_on, local_users):
    accounts_before = get_user_model().objects.count()
    sign_in_at_provider(page, live_server, UMA)
    page.wait_for_url(re.compile(r"/accounts/login/"))
    refusal = page.inner_text("[data-testid=sso-refusal]")
    assert f"No account here has the e-mail address {UMA.email}" in refusal
    assert get_user_model().objects.count() == accounts_before
    page.reload()  # the reason is shown once
    assert page.locator("[data-testid=sso-refusal]").count() == 0


def test_local_login_still_works_with_sso_on(live_server, page, sso_on, local_users):
    log_in(page, live_server, "victor.local")
    assert page.inner_text(".who") == "victor.local"


def test_logout_ends_the_session_here_and_at_the_provider(live_server, page, sso_on, local_users):
    sign_in_at_provider(page, live_server, ALICE)
    page.wait_for_url(live_server.url + "/")
    page.click("text=Log out")
    page.wait_for_url(re.compile(r"/accounts/login/\?logged_out=1"))
    page.goto(live_server.url + "/")
    assert "/accounts/login/" in page.url
    # The provider's session ended too: signing in again asks for the password.
    page.get_by_role("link", name=f"Sign in with {PROVIDER_NAME}").click()
    page.wait_for_url(re.compile(r"http://127\.0\.0\.1:\d+/login/"))


def test_sso_off_shows_no_button(live_server, page, settings, transactional_db):
    settings.MEDHELM_OIDC_CLIENT_ID = ""
    page.goto(live_server.url + "/accounts/login/")
    assert page.locator("#id_username").count() == 1
    assert page.get_by_text("Sign in with").count() == 0
    response = page.goto(live_server.url + "/accounts/sso/start/")
    assert response.status == 404
