"""Which account a provider's user signs in as: only the one whose e-mail the provider
verified; everyone else is refused with a reason, and every outcome is audited."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.contrib.auth import get_user_model

from annotation.models import AuditEvent, StudyMembership
from medhelm_site.accounts.models import SsoIdentity
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


# --- The provider's subject (issue 30): an address is not a person ---------------------------


def _as(sub: str, email: str, verified: object = True) -> dict[str, object]:
    return {**claims(email, verified), "sub": sub}


def test_the_first_sign_in_binds_the_subject_and_audits_it():
    user = get_user_model().objects.create_user("ann", "ann@hospital.example", "x")
    assert match_user(config=config(), claims=claims("ann@hospital.example")) == user
    identity = SsoIdentity.objects.get(user=user)
    assert (identity.issuer, identity.subject) == ("https://id.hospital.example", "42")
    event = AuditEvent.objects.get(action="account.sso_bind")
    assert (event.actor, event.target_id) == (user, str(user.pk))
    assert event.after["subject"] == "42" and event.after["email"] == "ann@hospital.example"


def test_an_address_given_to_another_subject_is_refused_and_logged(caplog):
    user = get_user_model().objects.create_user("ann", "ann@hospital.example", "x")
    match_user(config=config(), claims=_as("42", "ann@hospital.example"))
    with pytest.raises(SsoRefused) as refused:
        match_user(config=config(), claims=_as("77", "ann@hospital.example"))
    assert refused.value.reason == "bound_to_another_subject"
    assert "belongs to another Hospital ID user" in refused.value.message
    assert "bound to another subject" in caplog.text and "ann" in caplog.text
    assert AuditEvent.objects.get(action="account.sso_refused").after["reason"] == (
        "bound_to_another_subject"
    )
    assert SsoIdentity.objects.get(user=user).subject == "42"


def test_the_bound_subject_signs_in_whatever_its_email_now_says():
    user = get_user_model().objects.create_user("ann", "ann@hospital.example", "x")
    match_user(config=config(), claims=_as("42", "ann@hospital.example"))
    assert match_user(config=config(), claims=_as("42", "ann.b@hospital.example", False)) == user


def test_the_same_subject_from_another_issuer_is_another_user():
    get_user_model().objects.create_user("ann", "ann@hospital.example", "x")
    match_user(config=config(), claims=_as("42", "ann@hospital.example"))
    with pytest.raises(SsoRefused) as refused:
        match_user(
            config=config(),
            claims=_as("42", "ann@hospital.example"),
            issuer="https://other-id.example",
        )
    assert refused.value.reason == "bound_to_another_subject"


def test_a_sign_in_with_no_subject_is_refused():
    get_user_model().objects.create_user("ann", "ann@hospital.example", "x")
    with pytest.raises(SsoRefused) as refused:
        match_user(config=config(), claims=_as("", "ann@hospital.example"))
    assert refused.value.reason == "no_subject"
    assert not SsoIdentity.objects.exists()


@pytest.mark.parametrize("flag", ["is_staff", "is_superuser"])
def test_staff_and_superusers_are_not_matched_by_email(flag, caplog):
    get_user_model().objects.create_user("boss", "boss@hospital.example", "x", **{flag: True})
    with pytest.raises(SsoRefused) as refused:
        match_user(config=config(), claims=claims("boss@hospital.example"))
    assert refused.value.reason == "staff_by_email"
    assert "is a staff account" in refused.value.message
    assert "staff account boss" in caplog.text
    assert not SsoIdentity.objects.exists()
    assert not AuditEvent.objects.filter(action="account.sso_login").exists()


def test_staff_are_matched_by_email_when_the_setting_allows():
    boss = get_user_model().objects.create_user("boss", "boss@hospital.example", "x", is_staff=True)
    allow = replace(config(), match_staff_by_email=True)
    assert match_user(config=allow, claims=claims("boss@hospital.example")) == boss
    assert SsoIdentity.objects.get(user=boss).subject == "42"


def test_a_staff_account_bound_by_subject_signs_in_normally():
    boss = get_user_model().objects.create_user("boss", "boss@hospital.example", "x", is_staff=True)
    SsoIdentity.objects.create(user=boss, issuer="https://id.hospital.example", subject="42")
    assert match_user(config=config(), claims=claims("boss@hospital.example")) == boss


def test_a_disabled_account_bound_by_subject_is_refused():
    user = get_user_model().objects.create_user("ann", "ann@hospital.example", "x")
    match_user(config=config(), claims=claims("ann@hospital.example"))
    user.is_active = False
    user.save()
    with pytest.raises(SsoRefused) as refused:
        match_user(config=config(), claims=claims("ann@hospital.example"))
    assert refused.value.reason == "inactive"
