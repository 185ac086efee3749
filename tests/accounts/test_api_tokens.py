"""API tokens (django-rest-knox): hashed, expiring, ended by a password change, listed and
revoked by their owner and by staff, each change with an audit row."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from knox.crypto import hash_token

from annotation.models import AuditEvent
from medhelm_site.accounts.models import ApiToken
from medhelm_site.accounts.services import create_token
from tests.factories import TEST_PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

QUEUE = "/api/studies/{}/queue/"


def auth(secret: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Token {secret}"}


def test_api_login_gives_a_working_token_stored_only_as_a_hash(client, member, study_with_members):
    response = client.post(
        "/api/auth/login/",
        {"username": member.username, "password": TEST_PASSWORD, "name": "my script"},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    secret = body["token"]
    assert len(secret) == 64
    token = ApiToken.objects.get()
    assert token.digest == hash_token(secret) and token.digest != secret
    stored = [str(getattr(token, f.attname)) for f in ApiToken._meta.concrete_fields]
    assert not any(secret in value for value in stored)
    assert body["id"] == token.public_id and body["name"] == "my script"
    url = QUEUE.format(study_with_members.study.pk)
    assert Client().get(url, **auth(secret)).status_code == 200
    event = AuditEvent.objects.get(action="token.create")
    assert event.actor == member and event.after["token"] == token.public_id
    assert secret not in str(event.after)


def test_token_expires_after_the_configured_days(member, study_with_members, settings):
    token, secret = create_token(user=member)
    expected = token.created + timedelta(days=30)
    assert abs((token.expiry - expected).total_seconds()) < 5
    url = QUEUE.format(study_with_members.study.pk)
    client = Client()
    assert client.get(url, **auth(secret)).status_code == 200
    ApiToken.objects.filter(pk=token.pk).update(expiry=timezone.now() - timedelta(seconds=1))
    assert client.get(url, **auth(secret)).status_code == 401
    assert not ApiToken.objects.filter(pk=token.pk).exists()  # knox deletes it


def test_password_change_ends_every_token(client, member, study_with_members):
    _, secret = create_token(user=member)
    _, second = create_token(user=member)
    url = QUEUE.format(study_with_members.study.pk)
    assert Client().get(url, **auth(secret)).status_code == 200
    client.force_login(member)
    response = client.post(
        reverse("password_change"),
        {
            "old_password": TEST_PASSWORD,
            "new_password1": "a-new-long-passphrase-42",
            "new_password2": "a-new-long-passphrase-42",
        },
    )
    assert response.status_code == 302
    for old in (secret, second):
        response = Client().get(url, **auth(old))
        assert response.status_code == 401
        assert "before the password changed" in response.json()["detail"]
    # The page session that changed it goes on; a new token works.
    assert client.get(reverse("account-tokens")).status_code == 200
    member.refresh_from_db()
    _, fresh = create_token(user=member)
    assert Client().get(url, **auth(fresh)).status_code == 200


def test_password_set_elsewhere_ends_tokens_too(member, study_with_members):
    _, secret = create_token(user=member)
    member.set_password("set-by-an-admin-99")
    member.save()
    assert (
        Client().get(QUEUE.format(study_with_members.study.pk), **auth(secret)).status_code == 401
    )


def test_owner_lists_and_revokes_own_tokens_over_the_api(member):
    mine, secret = create_token(user=member, name="laptop")
    create_token(user=member, name="server")
    theirs, _ = create_token(user=UserFactory(), name="not mine")
    client = Client()
    listed = client.get("/api/auth/tokens/", **auth(secret)).json()
    assert sorted(t["name"] for t in listed) == ["laptop", "server"]
    assert all(t["user"] == member.username for t in listed)
    # Another's token cannot be revoked, nor listed.
    assert client.delete(f"/api/auth/tokens/{theirs.public_id}/", **auth(secret)).status_code == 404
    assert (
        client.get(f"/api/auth/tokens/?user={theirs.user.username}", **auth(secret)).status_code
        == 404
    )
    assert ApiToken.objects.filter(pk=theirs.pk).exists()
    # Revoking the token in use: it stops working at once.
    assert client.delete(f"/api/auth/tokens/{mine.public_id}/", **auth(secret)).status_code == 204
    assert client.get("/api/auth/tokens/", **auth(secret)).status_code == 401
    event = AuditEvent.objects.get(action="token.revoke")
    assert event.actor == member and event.before == {"token": mine.public_id, "name": "laptop"}


def test_staff_list_and_revoke_anybodys_token_over_the_api(member, staff_user):
    token, _ = create_token(user=member, name="laptop")
    client = Client()
    client.force_login(staff_user)
    listed = client.get(f"/api/auth/tokens/?user={member.username}").json()
    assert [t["id"] for t in listed] == [token.public_id]
    assert client.delete(f"/api/auth/tokens/{token.public_id}/").status_code == 204
    assert not ApiToken.objects.exists()
    assert AuditEvent.objects.get(action="token.revoke").actor == staff_user


def test_staff_revoke_in_the_admin(member):
    admin = UserFactory(is_staff=True, is_superuser=True)
    token, _ = create_token(user=member)
    client = Client()
    client.force_login(admin)
    changelist = reverse("admin:accounts_apitoken_changelist")
    assert token.public_id in client.get(changelist).content.decode()
    response = client.post(
        changelist, {"action": "revoke", ACTION_CHECKBOX_NAME: [token.pk]}, follow=True
    )
    assert response.status_code == 200
    assert not ApiToken.objects.exists()
    assert AuditEvent.objects.get(action="token.revoke").actor == admin


def test_tokens_page_makes_lists_and_revokes(client, member):
    other_token, _ = create_token(user=UserFactory(), name="someone else's")
    client.force_login(member)
    page = client.get(reverse("account-tokens"))
    assert page.status_code == 200 and "You have no API token." in page.content.decode()
    response = client.post(reverse("account-tokens"), {"name": "notebook"})
    text = response.content.decode()
    token = ApiToken.objects.get(user=member)
    secret_shown = text.split('data-testid="new-token">')[1].split("<")[0]
    assert hash_token(secret_shown) == token.digest
    listing = client.get(reverse("account-tokens")).content.decode()
    assert token.public_id in listing and "notebook" in listing
    assert secret_shown not in listing  # shown once only
    assert other_token.public_id not in listing
    revoke = reverse("account-token-revoke", args=[other_token.public_id])
    assert client.post(revoke).status_code == 404
    revoke = reverse("account-token-revoke", args=[token.public_id])
    assert client.post(revoke).status_code == 302
    assert not ApiToken.objects.filter(user=member).exists()


def test_token_name_too_long_is_a_clear_error(client, member):
    client.force_login(member)
    response = client.post(reverse("account-tokens"), {"name": "x" * 65})
    assert response.status_code == 400
    assert "at most 64 characters" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_wrong_and_malformed_tokens_answer_401(client, member, study_with_members):
    url = QUEUE.format(study_with_members.study.pk)
    _, secret = create_token(user=member)
    assert (
        client.get(url, **auth(secret[:-1] + ("0" if secret[-1] != "0" else "1"))).status_code
        == 401
    )
    assert client.get(url, **auth("not-a-token")).status_code == 401
    assert client.get(url, HTTP_AUTHORIZATION="Token").status_code == 401
    member.is_active = False
    member.save()
    assert client.get(url, **auth(secret)).status_code == 401
