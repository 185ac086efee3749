"""Fixtures for the accounts tests: a user with the known test password, and log-in helpers."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import TEST_PASSWORD, UserFactory


@pytest.fixture
def member(study_with_members):
    """A clinician of the study (its coordinator may unlock them)."""
    return study_with_members.clinicians[0]


@pytest.fixture
def login_page():
    """POST the login form for `username` with `password` from `address`."""

    def post(client, username: str, password: str, *, address: str = "10.0.0.1"):
        return client.post(
            reverse("login"),
            {"username": username, "password": password},
            REMOTE_ADDR=address,
        )

    return post


@pytest.fixture
def staff_user(db):
    return UserFactory(is_staff=True)


__all__ = ["TEST_PASSWORD"]
