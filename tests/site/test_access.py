"""Every page and API endpoint that exists, against every role: allowed, 403 or 404.

404 where a user may not know the study exists; 403 where they may see it but not do this;
302 to the login page (pages) or 401 (API) for anonymous users.
"""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token

from tests.factories import TEST_PASSWORD, UserFactory

ROLES = ["coordinator", "clinician", "researcher", "outsider", "staff", "anonymous"]

# (url pattern, {role: expected status}); {study} is the study's id, {missing} an id that does not exist.
TABLE = [
    (
        "/",
        dict(
            coordinator=200, clinician=200, researcher=200, outsider=200, staff=200, anonymous=302
        ),
    ),
    (
        "/studies/{study}/",
        dict(
            coordinator=200, clinician=403, researcher=200, outsider=404, staff=404, anonymous=302
        ),
    ),
    (
        "/studies/{study}/queue/",
        dict(
            coordinator=403, clinician=200, researcher=403, outsider=404, staff=404, anonymous=302
        ),
    ),
    (
        "/studies/{missing}/",
        dict(
            coordinator=404, clinician=404, researcher=404, outsider=404, staff=404, anonymous=302
        ),
    ),
    (
        "/studies/{missing}/queue/",
        dict(
            coordinator=404, clinician=404, researcher=404, outsider=404, staff=404, anonymous=302
        ),
    ),
    (
        "/api/studies/",
        dict(
            coordinator=200, clinician=200, researcher=200, outsider=200, staff=200, anonymous=401
        ),
    ),
    (
        "/api/studies/{study}/",
        dict(
            coordinator=200, clinician=200, researcher=200, outsider=404, staff=404, anonymous=401
        ),
    ),
    (
        "/api/studies/{study}/queue/",
        dict(
            coordinator=403, clinician=200, researcher=403, outsider=404, staff=404, anonymous=401
        ),
    ),
    (
        "/api/studies/{missing}/",
        dict(
            coordinator=404, clinician=404, researcher=404, outsider=404, staff=404, anonymous=401
        ),
    ),
    (
        "/api/schema/",
        dict(
            coordinator=200, clinician=200, researcher=200, outsider=200, staff=200, anonymous=401
        ),
    ),
    (
        "/admin/",
        dict(
            coordinator=302, clinician=302, researcher=302, outsider=302, staff=200, anonymous=302
        ),
    ),
    (
        "/accounts/password/change/",
        dict(
            coordinator=200, clinician=200, researcher=200, outsider=200, staff=200, anonymous=302
        ),
    ),
    (
        "/accounts/login/",
        dict(
            coordinator=200, clinician=200, researcher=200, outsider=200, staff=200, anonymous=200
        ),
    ),
    (
        "/accounts/password/reset/",
        dict(
            coordinator=200, clinician=200, researcher=200, outsider=200, staff=200, anonymous=200
        ),
    ),
]


def _user_for(role: str, setup):
    return {
        "coordinator": setup.coordinator,
        "clinician": setup.clinicians[0],
        "researcher": setup.researcher,
        "outsider": setup.outsider,
        "staff": UserFactory(username="site-admin", is_staff=True, is_superuser=True),
        "anonymous": None,
    }[role]


@pytest.mark.django_db
@pytest.mark.parametrize("url,expected", TABLE, ids=[row[0] for row in TABLE])
@pytest.mark.parametrize("role", ROLES)
def test_role_gets_expected_status(client, study_with_members, url, expected, role):
    user = _user_for(role, study_with_members)
    if user is not None:
        assert client.login(username=user.username, password=TEST_PASSWORD)
    path = url.format(study=study_with_members.study.pk, missing=study_with_members.study.pk + 999)
    response = client.get(path)
    assert response.status_code == expected[role], f"{role} GET {path}"
    if expected[role] == 302 and role == "anonymous" and not path.startswith("/admin/"):
        assert response["Location"].startswith("/accounts/login/")


@pytest.mark.django_db
def test_token_authentication_reaches_the_same_rules(client, study_with_members):
    token = Token.objects.create(user=study_with_members.clinicians[0])
    headers = {"HTTP_AUTHORIZATION": f"Token {token.key}"}
    study_id = study_with_members.study.pk
    assert client.get(f"/api/studies/{study_id}/queue/", **headers).status_code == 200
    other = Token.objects.create(user=study_with_members.outsider)
    assert (
        client.get(
            f"/api/studies/{study_id}/queue/", HTTP_AUTHORIZATION=f"Token {other.key}"
        ).status_code
        == 404
    )
    assert (
        client.get(
            f"/api/studies/{study_id}/queue/", HTTP_AUTHORIZATION="Token not-a-token"
        ).status_code
        == 401
    )


@pytest.mark.django_db
def test_outsider_lists_no_study(client, study_with_members):
    client.login(username=study_with_members.outsider.username, password=TEST_PASSWORD)
    assert client.get("/api/studies/").json()["results"] == []
