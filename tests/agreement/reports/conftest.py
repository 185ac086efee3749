"""A rated study whose clinicians have names and e-mails no report may show, built once per
module (tests/support/module_data.py: each test sees it as built, whatever the tests before
it wrote), and clients."""

from __future__ import annotations

import copy
import io
from collections.abc import Callable, Iterator

import pytest
from django.contrib.auth import get_user_model
from pypdf import PdfReader
from rest_framework.test import APIClient

from tests.agreement.factories import Built, build_study
from tests.support.module_data import Unblock, module_transaction

SECRET_NAMES = ("Zephyrine", "Quillfeather")


@pytest.fixture(autouse=True)
def reports_in_the_request(settings) -> None:
    """These tests read what a report shows: the pages and the API compute it in the request
    (tests/agreement/reports/test_background_jobs.py covers the worker's way)."""
    settings.AGREEMENT_REPORTS_IN_BACKGROUND = False


@pytest.fixture(scope="module")
def module_db(django_db_setup, django_db_blocker) -> Iterator[Unblock]:
    """This module's transaction: a module fixture writes its rows under `with module_db():`."""
    with module_transaction(django_db_blocker) as unblock:
        yield unblock


@pytest.fixture(scope="module")
def built_once(module_db: Unblock) -> Built:
    """The study every test of the module reads (a test's own writes are rolled back)."""
    with module_db():
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
def built(db, built_once: Built) -> Built:
    """The module's study, as this test's own copy of its objects."""
    return copy.deepcopy(built_once)


@pytest.fixture(scope="module")
def report_once(request, module_db: Unblock, built_once: Built):
    """The module's report of its study, computed once with the module's PARAMS and stored
    without its renderings (each download makes its own)."""
    from agreement import services

    with module_db():
        return services.create_snapshot(
            study=built_once.study, actor=None, parameters=request.module.PARAMS
        )


@pytest.fixture
def report(built: Built, report_once):
    """The module's report, as this test's own copy."""
    return copy.deepcopy(report_once)


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
