"""The panel: one-time invitation links, joining, pseudonyms, withdrawal."""

from __future__ import annotations

import hashlib

import pytest
from django.core import mail

from delphi import services
from delphi.access import roles_in_delphi_study
from delphi.models import DelphiAuditEvent, Panelist, PanelistRound
from delphi.services import DelphiError
from tests.delphi.flow import BASE_URL, make_panel_study
from tests.factories import TEST_PASSWORD, UserFactory


@pytest.fixture
def setup_study(db):
    """A study in set-up with nobody on the panel yet."""
    return make_panel_study(n_panelists=0, lock=False)


def _invite(built, email="Ann@Example.org", **kwargs):
    return services.invite_panelist(
        study=built.study, actor=built.coordinator, email=email, base_url=BASE_URL, **kwargs
    )


@pytest.mark.django_db
def test_invitation_mails_a_link_with_the_token_and_stores_only_its_hash(
    setup_study, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        panelist, token = _invite(setup_study, stakeholder_group=" nurse ", specialty="cardiology")
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["ann@example.org"]
    assert f"{BASE_URL}/delphi/join/{token}/" in message.body
    assert "P01" in message.body
    panelist.refresh_from_db()
    assert panelist.email == "ann@example.org"
    assert panelist.stakeholder_group == "nurse" and panelist.specialty == "cardiology"
    assert panelist.invite_token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in str(Panelist.objects.values().get(pk=panelist.pk))
    assert token not in str(list(DelphiAuditEvent.objects.values()))


@pytest.mark.django_db
def test_no_mail_when_the_invitation_rolls_back(setup_study, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        _invite(setup_study)
        with pytest.raises(DelphiError, match="already on the panel"):
            _invite(setup_study, email="ANN@example.org ")
    assert len(mail.outbox) == 1


@pytest.mark.django_db
def test_pseudonyms_are_sequential_and_reveal_nothing(setup_study):
    first, _ = _invite(setup_study, email="a@example.org")
    second, _ = _invite(setup_study, email="b@example.org")
    assert (first.pseudonym, second.pseudonym) == ("P01", "P02")
    with pytest.raises(DelphiError, match="not an e-mail address"):
        _invite(setup_study, email="nobody")


@pytest.mark.django_db
def test_token_works_once(setup_study):
    panelist, token = _invite(setup_study)
    assert services.panelist_for_token(token) == panelist
    user = UserFactory(username="ann")
    joined = services.accept_invitation(token=token, user=user)
    assert joined.user == user and joined.joined_at is not None
    assert joined.invite_token_hash == ""
    assert services.panelist_for_token(token) is None
    with pytest.raises(DelphiError, match="not valid"):
        services.accept_invitation(token=token, user=UserFactory(username="mallory"))
    assert roles_in_delphi_study(user=user, study=setup_study.study) == {"panelist"}


@pytest.mark.django_db
def test_renewal_invalidates_the_old_link(setup_study, django_capture_on_commit_callbacks):
    panelist, old = _invite(setup_study)
    with django_capture_on_commit_callbacks(execute=True):
        new = services.renew_invitation(
            panelist=panelist, actor=setup_study.coordinator, base_url=BASE_URL
        )
    assert new != old
    assert services.panelist_for_token(old) is None
    assert services.panelist_for_token(new) == panelist
    assert f"/delphi/join/{new}/" in mail.outbox[-1].body
    with pytest.raises(DelphiError, match="not valid"):
        services.accept_invitation(token=old, user=UserFactory(username="ann"))
    services.accept_invitation(token=new, user=UserFactory(username="ann"))
    with pytest.raises(DelphiError, match="already joined"):
        services.renew_invitation(panelist=panelist, actor=None, base_url=BASE_URL)


@pytest.mark.django_db
def test_account_creation_with_the_link(setup_study):
    panelist, token = _invite(setup_study)
    UserFactory(username="taken")
    with pytest.raises(DelphiError, match="username: 'taken' is taken"):
        services.create_account_and_accept(token=token, username="taken", password=TEST_PASSWORD)
    with pytest.raises(DelphiError, match=r"^password: "):
        services.create_account_and_accept(token=token, username="ann", password="123")
    # A refused attempt neither creates the account nor spends the link.
    assert not Panelist.objects.filter(user__username="ann").exists()
    joined = services.create_account_and_accept(
        token=token, username=" ann ", password=TEST_PASSWORD
    )
    assert joined.pk == panelist.pk
    assert joined.user.username == "ann" and joined.user.check_password(TEST_PASSWORD)
    with pytest.raises(DelphiError, match="not valid"):
        services.create_account_and_accept(token=token, username="ann2", password=TEST_PASSWORD)


@pytest.mark.django_db
def test_coordinator_cannot_be_a_panelist(setup_study):
    _panelist, token = _invite(setup_study)
    with pytest.raises(DelphiError, match="coordinator of the study cannot also be a panelist"):
        services.accept_invitation(token=token, user=setup_study.coordinator)
    assert services.panelist_for_token(token) is not None


@pytest.mark.django_db
def test_one_user_takes_one_seat(setup_study):
    _a, token_a = _invite(setup_study, email="a@example.org")
    _b, token_b = _invite(setup_study, email="b@example.org")
    user = UserFactory(username="ann")
    services.accept_invitation(token=token_a, user=user)
    with pytest.raises(DelphiError, match="already on this panel"):
        services.accept_invitation(token=token_b, user=user)


@pytest.mark.django_db
def test_withdraw_marks_the_open_round_and_spends_the_link():
    built = make_panel_study(n_panelists=2)
    services.open_round(round_=built.round(1), actor=built.coordinator, base_url=BASE_URL)
    pending, token = _invite(built, email="late@example.org")
    # Invited while round 1 is open: they are asked in it too.
    assert PanelistRound.objects.get(panelist=pending, round=built.round(1)).status == "invited"
    services.withdraw_panelist(panelist=pending, actor=built.coordinator, reason="asked to")
    services.withdraw_panelist(panelist=built.panelists[0], actor=built.coordinator)
    assert services.panelist_for_token(token) is None
    statuses = dict(
        PanelistRound.objects.filter(round=built.round(1)).values_list("panelist__email", "status")
    )
    assert statuses == {
        "panelist0@example.org": "withdrawn",
        "panelist1@example.org": "invited",
        "late@example.org": "withdrawn",
    }
    user0 = built.panelists[0].user
    assert roles_in_delphi_study(user=user0, study=built.study) == set()
    with pytest.raises(DelphiError, match="withdrawn"):
        services.renew_invitation(panelist=pending, actor=None, base_url=BASE_URL)
    event = DelphiAuditEvent.objects.get(action="panelist.withdraw", target=pending.pseudonym)
    assert event.reason == "asked to"


@pytest.mark.django_db
def test_no_invitations_after_the_study_finished():
    built = make_panel_study(n_panelists=1)
    built.study.status = "finished"
    built.study.save()
    with pytest.raises(DelphiError, match="finished"):
        _invite(built)
