"""A rated study whose clinicians have names and e-mails no report may show, and clients."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from django.contrib.auth import get_user_model
from pypdf import PdfReader
from rest_framework.test import APIClient

from tests.agreement.factories import Built, build_study

SECRET_NAMES = ("Zephyrine", "Quillfeather")


@pytest.fixture(autouse=True)
def reports_in_the_request(settings) -> None:
    """These tests read what a report shows: the pages and the API compute it in the request
    (tests/agreement/reports/test_background_jobs.py covers the worker's way)."""
    settings.AGREEMENT_REPORTS_IN_BACKGROUND = False


@pytest.fixture
def built(db) -> Built:
    b = build_study(n_items=12, n_clinicians=4, leave_pending=2)
    User = get_user_model()
    for n, c in enumerate(b.members.clinicians):
        User.objects.filter(pk=c.pk).update(
            username=f"dr-hidden-{n}",
            email=f"hidden.clinician{n}@hospital.example",
            first_name=SECRET_NAMES[0],
            last_name=SECRET_NAMES[1],
        )
    return b


@pytest.fixture
def forbidden_strings(built) -> list[str]:
    """Every clinician's name parts, username and e-mail."""
    out = list(SECRET_NAMES)
    for user in get_user_model().objects.filter(pk__in=[c.pk for c in built.members.clinicians]):
        out += [user.username, user.email]
    return out


@pytest.fixture
def api_as() -> Callable[[object], APIClient]:
    def client_for(user) -> APIClient:
        c = APIClient()
        c.force_authenticate(user)
        return c

    return client_for


@pytest.fixture
def pdf_page_count() -> Callable[[bytes], int]:
    # the typeset PDF keeps its page objects in compressed object streams: read it
    return lambda data: len(PdfReader(io.BytesIO(data)).pages)
