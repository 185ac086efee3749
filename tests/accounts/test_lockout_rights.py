"""Who may lift a login lockout (issue 30): a coordinator only the accounts wholly inside the
studies they coordinate (every membership active there, never staff), staff everything; a
refused lift leaves the lockout and writes no unlock audit row, and coordinators never see
the locked user's address."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.test import Client
from django.urls import reverse

from annotation import services as annotation_services
from annotation.models import AuditEvent, StudyMembership
from medhelm_site.accounts import selectors, services
from medhelm_site.accounts.errors import AccountError
from tests.factories import TEST_PASSWORD, UserFactory, make_study_with_members

pytestmark = pytest.mark.django_db

LIMIT = 5
ADDRESS = "203.0.113.77"  # the locked user's address: never on a coordinator's page
Role = StudyMembership.Role


def _lock(username: str, login_page) -> None:
    """Real wrong passwords through the login page, so django-axes records the lockout."""
    client = Client()
    for n in range(LIMIT):
        login_page(client, username, f"wrong-{n}", address=ADDRESS)
    assert login_page(Client(), username, TEST_PASSWORD, address=ADDRESS).status_code == 429


def _attempts(username: str) -> list[tuple]:
    return list(
        AccessAttempt.objects.filter(username=username)
        .order_by("pk")
        .values_list("pk", "failures_since_start", "ip_address")
    )


def _refused(client, username: str, login_page) -> None:
    """POSTing the unlock is a 403 that says why; the lockout and the audit log are as before."""
    before = _attempts(username)
    response = client.post(reverse("account-lockouts"), {"username": username})
    assert response.status_code == 403
    text = response.content.decode()
    assert f"You cannot unlock {username}" in text
    assert "Ask staff" in text
    assert _attempts(username) == before
    assert not AuditEvent.objects.filter(action="account.unlock").exists()
    assert login_page(Client(), username, TEST_PASSWORD, address=ADDRESS).status_code == 429


def test_reviewer_steps_a_coordinator_cannot_unlock_admin_through_a_removed_membership(
    client, login_page, study_with_members
):
    admin = UserFactory(username="admin", is_staff=True, is_superuser=True)
    _lock("admin", login_page)
    coordinator = study_with_members.coordinator
    study = study_with_members.study
    client.force_login(coordinator)
    members = reverse("annotation:members", args=[study.pk])
    added = client.post(members, {"action": "add", "username": "admin", "role": "researcher"})
    assert added.status_code == 302
    membership = StudyMembership.objects.get(study=study, user=admin, role=Role.RESEARCHER)
    removed = client.post(members, {"action": "remove", "membership": membership.pk})
    assert removed.status_code == 302
    membership.refresh_from_db()
    assert not membership.is_active
    _refused(client, "admin", login_page)
    assert "Unlock admin" not in client.get(reverse("account-lockouts")).content.decode()


def test_a_coordinator_cannot_unlock_staff_even_while_an_active_member(
    client, login_page, study_with_members
):
    boss = UserFactory(is_staff=True)
    annotation_services.add_member(
        study=study_with_members.study,
        user=boss,
        role=Role.RESEARCHER,
        actor=study_with_members.coordinator,
    )
    _lock(boss.username, login_page)
    client.force_login(study_with_members.coordinator)
    assert f"Unlock {boss.username}" not in client.get(reverse("account-lockouts")).content.decode()
    _refused(client, boss.username, login_page)


def test_a_coordinator_cannot_unlock_a_superuser_without_staff(
    client, login_page, study_with_members
):
    root = UserFactory(is_superuser=True)
    annotation_services.add_member(
        study=study_with_members.study,
        user=root,
        role=Role.RESEARCHER,
        actor=study_with_members.coordinator,
    )
    _lock(root.username, login_page)
    client.force_login(study_with_members.coordinator)
    _refused(client, root.username, login_page)


def test_a_removed_member_is_not_unlockable(client, login_page, study_with_members):
    member = study_with_members.clinicians[0]
    annotation_services.remove_member(
        study=study_with_members.study,
        user=member,
        role=Role.CLINICIAN,
        actor=study_with_members.coordinator,
    )
    _lock(member.username, login_page)
    client.force_login(study_with_members.coordinator)
    assert (
        f"Unlock {member.username}" not in client.get(reverse("account-lockouts")).content.decode()
    )
    _refused(client, member.username, login_page)


def test_a_member_of_another_study_too_is_not_unlockable(client, login_page, study_with_members):
    member = study_with_members.clinicians[0]
    other = make_study_with_members(name="Another study", n_clinicians=2)
    annotation_services.add_member(
        study=other.study, user=member, role=Role.CLINICIAN, actor=other.coordinator
    )
    _lock(member.username, login_page)
    client.force_login(study_with_members.coordinator)
    assert (
        f"Unlock {member.username}" not in client.get(reverse("account-lockouts")).content.decode()
    )
    _refused(client, member.username, login_page)


def test_a_member_of_two_studies_both_coordinated_is_unlockable(
    client, login_page, study_with_members
):
    member = study_with_members.clinicians[0]
    other = make_study_with_members(name="Another study", n_clinicians=2)
    annotation_services.add_member(
        study=other.study, user=member, role=Role.CLINICIAN, actor=other.coordinator
    )
    annotation_services.add_member(
        study=other.study,
        user=study_with_members.coordinator,
        role=Role.COORDINATOR,
        actor=other.coordinator,
    )
    _lock(member.username, login_page)
    client.force_login(study_with_members.coordinator)
    assert f"Unlock {member.username}" in client.get(reverse("account-lockouts")).content.decode()
    response = client.post(reverse("account-lockouts"), {"username": member.username})
    assert response.status_code == 302
    assert login_page(Client(), member.username, TEST_PASSWORD, address=ADDRESS).status_code == 302


def test_a_former_coordinator_cannot_unlock_their_old_members(
    client, login_page, study_with_members
):
    study, first = study_with_members.study, study_with_members.coordinator
    second = UserFactory()
    annotation_services.add_member(study=study, user=second, role=Role.COORDINATOR, actor=first)
    other = make_study_with_members(name="Still coordinated", n_clinicians=2)
    annotation_services.add_member(
        study=other.study, user=first, role=Role.COORDINATOR, actor=other.coordinator
    )
    annotation_services.remove_member(study=study, user=first, role=Role.COORDINATOR, actor=second)
    member = study_with_members.clinicians[0]
    _lock(member.username, login_page)
    client.force_login(first)
    _refused(client, member.username, login_page)


def test_a_username_with_no_account_is_refused_to_a_coordinator(
    client, login_page, study_with_members
):
    _lock("ghost", login_page)
    client.force_login(study_with_members.coordinator)
    assert "Unlock ghost" not in client.get(reverse("account-lockouts")).content.decode()
    _refused(client, "ghost", login_page)


def test_the_coordinators_page_shows_no_address_and_staff_see_it(
    client, login_page, study_with_members, staff_user
):
    member = study_with_members.clinicians[0]
    _lock(member.username, login_page)
    client.force_login(study_with_members.coordinator)
    page = client.get(reverse("account-lockouts")).content.decode()
    assert f"Unlock {member.username}" in page
    assert ADDRESS not in page
    assert ">Address<" not in page
    staff = Client()
    staff.force_login(staff_user)
    page = staff.get(reverse("account-lockouts")).content.decode()
    assert ADDRESS in page and ">Address<" in page


def test_a_coordinators_unlock_row_keeps_the_address_from_their_audit_log(
    client, login_page, study_with_members
):
    member = study_with_members.clinicians[0]
    _lock(member.username, login_page)
    client.force_login(study_with_members.coordinator)
    assert (
        client.post(reverse("account-lockouts"), {"username": member.username}).status_code == 302
    )
    event = AuditEvent.objects.get(action="account.unlock")
    assert event.study == study_with_members.study
    assert event.before == {"username": member.username, "failures": LIMIT, "address_count": 1}
    assert ADDRESS not in client.get(reverse("annotation:audit")).content.decode()


@pytest.mark.parametrize("target", ["staff", "superuser"])
def test_staff_unlock_staff_and_superusers(client, login_page, staff_user, target):
    locked = UserFactory(is_staff=target == "staff", is_superuser=target == "superuser")
    _lock(locked.username, login_page)
    client.force_login(staff_user)
    assert f"Unlock {locked.username}" in client.get(reverse("account-lockouts")).content.decode()
    assert (
        client.post(reverse("account-lockouts"), {"username": locked.username}).status_code == 302
    )
    assert login_page(Client(), locked.username, TEST_PASSWORD, address=ADDRESS).status_code == 302
    event = AuditEvent.objects.get(action="account.unlock")
    assert event.before["addresses"] == [ADDRESS]


def test_the_service_refuses_what_the_page_hides(login_page, study_with_members):
    """The page's list and the unlock ask the same rule: no direct call gets around it."""
    admin = UserFactory(is_staff=True)
    _lock(admin.username, login_page)
    coordinator = study_with_members.coordinator
    assert selectors.unlockable_usernames(actor=coordinator, usernames=[admin.username]) == {}
    with pytest.raises(AccountError) as refused:
        services.unlock(actor=coordinator, username=admin.username)
    assert refused.value.field == "username"
    assert login_page(Client(), admin.username, TEST_PASSWORD, address=ADDRESS).status_code == 429
