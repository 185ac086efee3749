"""Which account a provider's user signs in as: only the one whose e-mail the provider
verified; everyone else is refused with a reason, and every outcome is audited."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from annotation.models import AuditEvent, StudyMembership
from medhelm_site.accounts.sso.config import SsoConfig
from medhelm_site.accounts.sso.matching import SsoRefused, email_is_verified, match_user

pytestmark = pytest.mark.django_db


def config(*, create_users: bool = False) -> SsoConfig:
    return SsoConfig(
        provider_name="Hospital ID",
        issuer="https://id.hospital.example",
        client_id="site",
        client_secret="secret",
        scopes="openid email",
        sign_algo="RS256",
        create_users=create_users,
        provider_logout=True,
        explicit={},
    )


def claims(email: str, verified: object = True) -> dict[str, object]:
    return {"sub": "42", "email": email, "email_verified": verified}


@pytest.mark.parametrize(
    ("flag", "verified"),
    [
        (True, True),
        ("true", True),
        ("TRUE", True),
        (False, False),
        ("false", False),
        (None, False),
        (1, False),
        ("yes", False),
    ],
)
def test_only_a_true_email_verified_counts(flag, verified):
    assert email_is_verified({"email_verified": flag}) is verified


def test_verified_email_matches_the_account_whatever_its_case():
    user = get_user_model().objects.create_user("ann", "Ann@Hospital.example", "x")
    assert match_user(config=config(), claims=claims("ann@hospital.EXAMPLE")) == user
    event = AuditEvent.objects.get(action="account.sso_login")
    assert (event.actor, event.target_id) == (user, str(user.pk))


@pytest.mark.parametrize(
    ("given", "reason", "says"),
    [
        (claims("ann@hospital.example", verified=False), "email_not_verified", "has not verified"),
        ({"sub": "42", "email_verified": True}, "no_email", "did not tell us your e-mail"),
        (claims("nobody@hospital.example"), "unknown_email", "No account here has"),
    ],
)
def test_refusals_say_why_and_are_audited(given, reason, says):
    get_user_model().objects.create_user("ann", "ann@hospital.example", "x")
    with pytest.raises(SsoRefused) as refused:
        match_user(config=config(), claims=given)
    assert refused.value.reason == reason
    assert says in refused.value.message
    assert AuditEvent.objects.get(action="account.sso_refused").after["reason"] == reason
    assert get_user_model().objects.count() == 1


def test_two_accounts_with_one_email_are_refused():
    for name in ("ann", "ann2"):
        get_user_model().objects.create_user(name, "ann@hospital.example", "x")
    with pytest.raises(SsoRefused) as refused:
        match_user(config=config(), claims=claims("ann@hospital.example"))
    assert refused.value.reason == "several_accounts"


def test_a_disabled_account_is_refused():
    user = get_user_model().objects.create_user("ann", "ann@hospital.example", "x")
    user.is_active = False
    user.save()
    with pytest.raises(SsoRefused) as refused:
        match_user(config=config(), claims=claims("ann@hospital.example"))
    assert refused.value.reason == "inactive"


def test_creating_accounts_when_allowed_gives_no_role_and_no_password():
    get_user_model().objects.create_user("ann", "other@hospital.example", "x")
    user = match_user(config=config(create_users=True), claims=claims("ann@hospital.example"))
    assert user.username == "ann2"  # "ann" was taken
    assert user.email == "ann@hospital.example"
    assert not user.has_usable_password()
    assert not user.is_staff
    assert not StudyMembership.objects.filter(user=user).exists()
    assert AuditEvent.objects.get(action="account.sso_login").after["created"] is True


def test_unverified_email_is_refused_even_when_creating_accounts():
    with pytest.raises(SsoRefused):
        match_user(
            config=config(create_users=True),
            claims=claims("ann@hospital.example", verified=False),
        )
    assert not get_user_model().objects.exists()
