"""The lock API changes a study's lock only when told which way: a body without `locked`
(JSON, url-encoded form or multipart) is a 400 naming the field, and the lock stays."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.models import RatingStudy


def coordinator_client(setup) -> APIClient:
    client = APIClient()
    client.force_authenticate(setup.coordinator)
    return client


def lock_url(setup) -> str:
    return f"/api/studies/{setup.study.pk}/lock/"


@pytest.mark.parametrize("body_format", ["json", "multipart"])
def test_lock_then_unlock_in_each_format(study_with_members, body_format):
    client = coordinator_client(study_with_members)
    url = lock_url(study_with_members)
    for value, sent in ((True, "true"), (False, "false")):
        data = {"locked": value if body_format == "json" else sent}
        r = client.post(url, data, format=body_format)
        assert r.status_code == 200, r.content
        assert r.json()["is_locked"] is value


@pytest.mark.parametrize("body_format", ["json", "multipart", "form"])
@pytest.mark.parametrize("body", [{}, {"other": "1"}])
def test_a_body_without_locked_is_a_400_and_the_study_stays_locked(
    study_with_members, body_format, body
):
    client = coordinator_client(study_with_members)
    url = lock_url(study_with_members)
    assert client.post(url, {"locked": True}, format="json").status_code == 200
    if body_format == "form":
        r = client.post(
            url,
            "&".join(f"{k}={v}" for k, v in body.items()),
            content_type="application/x-www-form-urlencoded",
        )
    else:
        r = client.post(url, body, format=body_format)
    assert r.status_code == 400, r.content
    assert "locked" in r.json()
    assert RatingStudy.objects.get(pk=study_with_members.study.pk).is_locked is True
