"""Login throttling (django-axes): the login page and the API's token login share one count
of failures per username and address; a locked account is refused even with the right
password, is told until when, and can be unlocked."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import SESSION_KEY
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotation.models import AuditEvent
from tests.factories import TEST_PASSWORD

pytestmark = pytest.mark.django_db

LIMIT = 5


def api_login(client, username: str, password: str, *, address: str = "10.0.0.1"):
    return client.post(
        "/api/auth/login/",
        {"username": username, "password": password},
        content_type="application/json",
        REMOTE_ADDR=address,
    )


def test_limit_and_cool_off_come_from_settings(settings):
    assert settings.AXES_FAILURE_LIMIT == LIMIT
    assert settings.AXES_COOLOFF_TIME.total_seconds() == 30 * 60
    assert settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]


def test_forty_wrong_passwords_then_the_right_one_is_refused(client, member, login_page):
    statuses = [login_page(client, member.username, f"wrong-{n}").status_code for n in range(40)]
    assert statuses[: LIMIT - 1] == [200] * (LIMIT - 1)  # the form again, with its error
    assert set(statuses[LIMIT - 1 :]) == {429}
    response = login_page(client, member.username, TEST_PASSWORD)
    assert response.status_code == 429
    assert SESSION_KEY not in client.session
    text = response.content.decode()
    assert f"locked after {LIMIT} failed log-ins" in text
    assert "It unlocks at " in text
    assert response["Retry-After"].isdigit() and 0 < int(response["Retry-After"]) <= 30 * 60
    # Still locked for the page that needs a login.
    assert client.get(reverse("home")).status_code == 302


def test_the_right_password_before_the_limit_works_and_resets_the_count(client, member, login_page):
    for n in range(LIMIT - 1):
        assert login_page(client, member.username, f"wrong-{n}").status_code == 200
    response = login_page(client, member.username, TEST_PASSWORD)
    assert response.status_code == 302
    assert client.session[SESSION_KEY] == str(member.pk)
    # A success resets the count: another LIMIT - 1 failures are not a lockout.
    other = Client()
    for n in range(LIMIT - 1):
        assert login_page(other, member.username, f"again-{n}").status_code == 200
    assert login_page(other, member.username, TEST_PASSWORD).status_code == 302


def test_lockout_is_per_username_and_address(client, member, login_page):
    for n in range(LIMIT):
        login_page(client, member.username, f"wrong-{n}", address="10.0.0.1")
    assert (
        login_page(Client(), member.username, TEST_PASSWORD, address="10.0.0.1").status_code == 429
    )
    assert (
        login_page(Client(), member.username, TEST_PASSWORD, address="10.0.0.2").status_code == 302
    )


def test_lockout_ends_after_the_cool_off(client, member, login_page, settings):
    for n in range(LIMIT):
        login_page(client, member.username, f"wrong-{n}")
    assert login_page(client, member.username, TEST_PASSWORD).status_code == 429
    AccessAttempt.objects.update(
        attempt_time=AccessAttempt.objects.get().attempt_time - settings.AXES_COOLOFF_TIME
    )
    assert login_page(client, member.username, TEST_PASSWORD).status_code == 302


def test_api_login_is_throttled_with_a_json_429(client, member):
    for n in range(LIMIT - 1):
        response = api_login(client, member.username, f"wrong-{n}")
        assert response.status_code == 401
        assert response.json() == {"detail": "Wrong username or password."}
    response = api_login(client, member.username, "wrong-last")
    assert response.status_code == 429
    body = response.json()
    assert body["locked"] is True and "locked after 5 failed log-ins" in body["detail"]
    assert "unlocks_at" in body
    response = api_login(client, member.username, TEST_PASSWORD)
    assert response.status_code == 429
    assert "token" not in response.json()


def test_page_and_api_failures_count_together(client, member, login_page):
    for n in range(LIMIT - 1):
        login_page(client, member.username, f"wrong-{n}")
    assert api_login(client, member.username, "wrong").status_code == 429
    assert login_page(client, member.username, TEST_PASSWORD).status_code == 429


def _lock(client, username, login_page):
    for n in range(LIMIT):
        login_page(client, username, f"wrong-{n}")
    assert login_page(Client(), username, TEST_PASSWORD).status_code == 429


def test_staff_unlock_on_the_lockouts_page_with_an_audit_row(
    client, member, login_page, staff_user
):
    _lock(Client(), member.username, login_page)
    client.force_login(staff_user)
    page = client.get(reverse("account-lockouts"))
    assert page.status_code == 200
    assert f"Unlock {member.username}" in page.content.decode()
    response = client.post(reverse("account-lockouts"), {"username": member.username})
    assert response.status_code == 302
    assert login_page(Client(), member.username, TEST_PASSWORD).status_code == 302
    event = AuditEvent.objects.get(action="account.unlock")
    assert event.actor == staff_user
    assert event.target_type == "User" and event.target_id == str(member.pk)
    assert event.before["failures"] == LIMIT and event.before["addresses"] == ["10.0.0.1"]


def test_coordinator_unlocks_a_member_of_their_study(
    client, member, login_page, study_with_members
):
    _lock(Client(), member.username, login_page)
    client.force_login(study_with_members.coordinator)
    assert member.username in client.get(reverse("account-lockouts")).content.decode()
    assert (
        client.post(reverse("account-lockouts"), {"username": member.username}).status_code == 302
    )
    assert login_page(Client(), member.username, TEST_PASSWORD).status_code == 302
    event = AuditEvent.objects.get(action="account.unlock")
    assert event.actor == study_with_members.coordinator
    assert event.study == study_with_members.study


def test_coordinator_cannot_unlock_an_outsider(client, login_page, study_with_members):
    outsider = study_with_members.outsider
    _lock(Client(), outsider.username, login_page)
    client.force_login(study_with_members.coordinator)
    assert outsider.username not in client.get(reverse("account-lockouts")).content.decode()
    response = client.post(reverse("account-lockouts"), {"username": outsider.username})
    assert response.status_code == 403
    assert f"You cannot unlock {outsider.username}" in response.content.decode()
    assert login_page(Client(), outsider.username, TEST_PASSWORD).status_code == 429
    assert not AuditEvent.objects.filter(action="account.unlock").exists()


def test_a_clinician_has_no_lockouts_page(client, member):
    client.force_login(member)
    assert client.get(reverse("account-lockouts")).status_code == 404
    assert client.post(reverse("account-lockouts"), {"username": "x"}).status_code == 404


def test_unlock_command_with_an_audit_row(member, login_page):
    _lock(Client(), member.username, login_page)
    call_command("unlock_account", member.username)
    assert login_page(Client(), member.username, TEST_PASSWORD).status_code == 302
    event = AuditEvent.objects.get(action="account.unlock")
    assert event.actor is None and event.target_id == str(member.pk)


def test_client_address_behind_proxies(rf, settings):
    from medhelm_site.accounts.backends import client_ip

    request = rf.get("/", REMOTE_ADDR="10.9.9.9", HTTP_X_FORWARDED_FOR="6.6.6.6, 1.2.3.4")
    settings.LOGIN_PROXY_COUNT = 0
    assert client_ip(request) == "10.9.9.9"
    settings.LOGIN_PROXY_COUNT = 1
    assert client_ip(request) == "1.2.3.4"  # what the proxy saw, not what the client claims
    settings.LOGIN_PROXY_COUNT = 3
    assert client_ip(request) == "10.9.9.9"  # fewer entries than proxies: not trusted
