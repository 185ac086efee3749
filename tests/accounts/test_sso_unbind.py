"""Staff release a single sign-on binding in the admin (the provider reissued the person's
subject, or moved them to another provider): audited, after which the account's next
verified-e-mail sign-in binds the new subject."""

from __future__ import annotations

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from annotation.models import AuditEvent
from medhelm_site.accounts.models import SsoIdentity
from medhelm_site.accounts.sso.config import SsoConfig
from medhelm_site.accounts.sso.matching import match_user
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

CONFIG = SsoConfig(
    provider_name="Hospital ID",
    issuer="https://id.hospital.example",
    client_id="site",
    client_secret="secret",
    scopes="openid email",
    sign_algo="RS256",
    create_users=False,
    provider_logout=True,
    explicit={},
)


def test_staff_unbind_in_the_admin_and_the_next_sign_in_binds_anew():
    ann = get_user_model().objects.create_user("ann", "ann@hospital.example", "x")
    claims = {"email": "ann@hospital.example", "email_verified": True}
    match_user(config=CONFIG, claims={**claims, "sub": "old"})
    identity = SsoIdentity.objects.get(user=ann)
    admin = UserFactory(is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(admin)
    changelist = reverse("admin:accounts_ssoidentity_changelist")
    assert "ann" in client.get(changelist).content.decode()
    response = client.post(
        changelist, {"action": "unbind", ACTION_CHECKBOX_NAME: [identity.pk]}, follow=True
    )
    assert response.status_code == 200
    assert not SsoIdentity.objects.exists()
    event = AuditEvent.objects.get(action="account.sso_unbind")
    assert (event.actor, event.target_id) == (admin, str(ann.pk))
    assert event.before == {"issuer": "https://id.hospital.example", "subject": "old"}
    assert match_user(config=CONFIG, claims={**claims, "sub": "new"}) == ann
    assert SsoIdentity.objects.get(user=ann).subject == "new"


def test_a_binding_cannot_be_edited_or_added_in_the_admin():
    admin = UserFactory(is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(admin)
    assert client.get(reverse("admin:accounts_ssoidentity_add")).status_code == 403
