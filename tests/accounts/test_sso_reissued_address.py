"""A real sign-in through the test OpenID provider (tests/support/oidc_provider/): once Alice
has signed in, her account answers to her subject, and a new provider user given her address
is refused on the login page instead of taking the account over."""

from __future__ import annotations

import pytest
from django.contrib.auth import SESSION_KEY, get_user_model
from django.test import Client

from annotation.models import AuditEvent
from medhelm_site.accounts.models import SsoIdentity
from medhelm_site.accounts.sso.config import forget_discovery
from tests.factories import TEST_PASSWORD
from tests.support.oidc_provider.client import sign_in
from tests.support.oidc_provider.server import ProviderUser, running_provider

PROVIDER_NAME = "Test Hospital ID"
PROVIDER_PASSWORD = "provider-password-9431"
EMAIL = "alice@hospital.example"
ALICE = ProviderUser("alice", EMAIL, PROVIDER_PASSWORD, email_verified=True)
# The provider gave Alice's address to a newcomer: another user, so another subject.
NEWCOMER = ProviderUser("alice.new", EMAIL, PROVIDER_PASSWORD, email_verified=True)

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    with running_provider(
        workdir=tmp_path_factory.mktemp("oidc-provider"),
        redirect_uris=["http://testserver/accounts/sso/callback/"],
        users=[ALICE, NEWCOMER],
    ) as running:
        yield running


@pytest.fixture
def sso_on(settings, provider):
    settings.MEDHELM_OIDC_CLIENT_ID = provider.client_id
    settings.MEDHELM_OIDC_CLIENT_SECRET = provider.client_secret
    settings.MEDHELM_OIDC_ISSUER = provider.issuer
    settings.MEDHELM_OIDC_PROVIDER_NAME = PROVIDER_NAME
    forget_discovery()
    yield provider
    forget_discovery()


def test_a_reissued_address_does_not_take_over_the_account(sso_on):
    alice = get_user_model().objects.create_user("alice.local", EMAIL, TEST_PASSWORD)
    first = Client()
    response = sign_in(
        first, provider_url=sso_on.url, username=ALICE.username, password=ALICE.password
    )
    assert response.status_code == 302 and response["Location"] == "/"
    assert first.session[SESSION_KEY] == str(alice.pk)
    bound = SsoIdentity.objects.get(user=alice)
    assert bound.issuer == sso_on.issuer
    assert AuditEvent.objects.filter(action="account.sso_bind", target_id=str(alice.pk)).exists()

    newcomer = Client()
    response = sign_in(
        newcomer, provider_url=sso_on.url, username=NEWCOMER.username, password=NEWCOMER.password
    )
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert SESSION_KEY not in newcomer.session
    page = newcomer.get("/accounts/login/").content.decode()
    assert f"The account with the e-mail address {EMAIL} belongs to another" in page
    refused = AuditEvent.objects.get(action="account.sso_refused")
    assert refused.after["reason"] == "bound_to_another_subject"
    assert SsoIdentity.objects.get(user=alice).subject == bound.subject

    # Alice herself still signs in: her subject finds her account.
    again = Client()
    response = sign_in(
        again, provider_url=sso_on.url, username=ALICE.username, password=ALICE.password
    )
    assert again.session[SESSION_KEY] == str(alice.pk)
