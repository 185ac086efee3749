"""A schema-driven fuzz run of the API (schemathesis over drf-spectacular's /api/schema/),
called through WSGI inside a test's database transaction.

`seed_world` makes a data set where every role has real objects; `fuzz_api` sends bounded,
reproducible cases (examples, coverage and fuzzing phases; positive and negative data) to
every operation and returns each response that fails schemathesis' not_a_server_error check,
instead of stopping at the first (so one run lists every 5xx).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.core.result import Ok
from schemathesis.pytest.lazy import get_all_tests

from agreement import services as agreement_services
from annotation import services as annotation_services
from annotation.models import Assignment
from delphi import services as delphi_services
from medhelm_site.accounts.services import create_token
from tests.delphi.flow import BASE_URL, make_panel_study
from tests.factories import FULL_ANSWERS, UserFactory, make_study_with_members
from tests.support.assignments import assignment_ref

SCHEMA_PATH = "/api/schema/"
ROLES = ("anonymous", "coordinator", "clinician", "researcher", "staff")
# Fuzzed cases for the operations that compute or render a report (see fuzz_api).
HEAVY_EXAMPLES = 3
# Long enough to see what failed; the whole body can be a page of HTML.
BODY_SHOWN = 500


@dataclass
class World:
    """Users by role and the ids of the objects they can reach."""

    users: dict[str, Any]
    # Path parameter values: the rating study's, and the Delphi study's for /delphi/ paths.
    parameters: dict[str, int]
    delphi_parameters: dict[str, int]
    _tokens: dict[str, str] = field(default_factory=dict)

    def token(self, role: str) -> str | None:
        """The API token of `role`'s user, made once (only its hash is stored)."""
        user = self.users.get(role)
        if user is None:
            return None
        if role not in self._tokens:
            self._tokens[role] = create_token(user=user, name="fuzz")[1]
        return self._tokens[role]


def seed_world() -> World:
    """A rating study under way (submitted ratings, an agreement report) whose first
    clinician is also a panelist of a Delphi study with round 1 open; a site administrator
    who belongs to neither."""
    setup = make_study_with_members(n_items=6, n_clinicians=3, k=2)
    clinician = setup.clinicians[0]
    for other in setup.clinicians[1:]:
        for assignment in Assignment.objects.filter(study=setup.study, clinician=other):
            annotation_services.submit_assignment(
                assignment_id=assignment.pk, clinician=other, answers=FULL_ANSWERS
            )
    report = agreement_services.create_snapshot(
        study=setup.study, actor=setup.coordinator, parameters={"n_resamples": 60, "seed": 5}
    )
    panel = make_panel_study(n_panelists=2, lock=False)
    _panelist, token = delphi_services.invite_panelist(
        study=panel.study, actor=panel.coordinator, email=clinician.email, base_url=BASE_URL
    )
    delphi_services.accept_invitation(token=token, user=clinician)
    delphi_services.lock_protocol(study=panel.study, actor=panel.coordinator)
    delphi_services.open_round(round_=panel.round(1), actor=panel.coordinator, base_url=BASE_URL)
    own = Assignment.objects.filter(study=setup.study, clinician=clinician).first()
    return World(
        users={
            "anonymous": None,
            "coordinator": setup.coordinator,
            "clinician": clinician,
            "researcher": setup.researcher,
            "staff": UserFactory(username="site-admin", is_staff=True, is_superuser=True),
        },
        # Both names of the assignment's path parameter (`handle` once point 3 is merged).
        parameters={
            "study_id": setup.study.pk,
            "assignment_id": own.pk,
            "handle": assignment_ref(own),
            "report_id": report.pk,
        },
        delphi_parameters={"study_id": panel.study.pk},
    )


@dataclass
class ServerError:
    method: str
    path: str
    status: int
    body: str

    def __str__(self) -> str:
        return f"{self.method} {self.path} -> {self.status}\n{self.body}"


@dataclass
class FuzzRun:
    operations: list[str] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    server_errors: list[ServerError] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return self.statuses.total()


@contextmanager
def connections_kept_open() -> Iterator[None]:
    """Django closes the database connection when a request starts and ends; inside a test's
    transaction that would lose the test's data. Django's test client does the same."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@contextmanager
def _quiet_client_errors() -> Iterator[None]:
    """Django logs every 4xx as a warning: thousands of lines. Server errors still log."""
    logger = logging.getLogger("django.request")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def fuzz_api(
    *, world: World, role: str, max_examples: int, path_regex: str | None = None
) -> FuzzRun:
    """Every operation of the schema (or those whose path matches `path_regex`) as `role`,
    `max_examples` fuzzed cases each plus the examples and coverage phases, deterministic.
    Returns what was covered and every response of 500 or more."""
    app = WSGIHandler()
    loader_token = world.token("coordinator")  # the schema itself needs a login
    token = world.token(role)
    config = SchemathesisConfig.from_dict(
        {
            "headers": {"Authorization": f"Token {token}"} if token else {},
            "parameters": world.parameters,
            "operations": [
                {"include-path-regex": "^/delphi/", "parameters": world.delphi_parameters},
                # A valid request to these computes a report (a quarter of a second) or
                # renders its PDF (over a second): few fuzzed cases, and the coverage phase
                # sends them only invalid data (the PDF's only inputs are its path and
                # `format`, which fuzzing covers).
                {
                    "include-path-regex": "/reports/$",
                    "include-method": "POST",
                    "generation": {"max-examples": HEAVY_EXAMPLES},
                    "phases": {"coverage": {"generation": {"mode": "negative"}}},
                },
                {
                    "include-path-regex": "/recompute/$",
                    "generation": {"max-examples": HEAVY_EXAMPLES},
                },
                {
                    "include-path-regex": "/pdf/$",
                    "generation": {"max-examples": HEAVY_EXAMPLES},
                    "phases": {"coverage": {"enabled": False}},
                },
            ],
            "generation": {
                "max-examples": max_examples,
                "deterministic": True,
                "database": "none",
                "mode": "all",
            },
            "phases": {"stateful": {"enabled": False}},
            # Hypothesis' timing checks would make a run on a busy machine fail by itself.
            "suppress-health-check": ["all"],
            "checks": {"enabled": False, "not_a_server_error": {"enabled": True}},
        }
    )
    run = FuzzRun()
    with connections_kept_open(), _quiet_client_errors():
        schema = schemathesis.openapi.from_wsgi(
            SCHEMA_PATH, app, config=config, headers={"Authorization": f"Token {loader_token}"}
        )

        def check(case) -> None:
            response = case.call()
            run.statuses[response.status_code] += 1
            # not_a_server_error excuses a 5xx to a probe with a wrong Content-Type when the
            # same request without it fails too; here every 5xx counts.
            failed = response.status_code >= 500
            try:
                case.validate_response(response, checks=[not_a_server_error])
            except (Failure, FailureGroup):
                failed = True
            if failed:
                run.server_errors.append(
                    ServerError(
                        method=response.request.method,
                        path=_path_and_query(response.request.url),
                        status=response.status_code,
                        body=response.content[:BODY_SHOWN].decode("utf-8", "replace"),
                    )
                )

        for result in get_all_tests(schema=schema, test_func=check, settings=None, given_kwargs={}):
            operation, test = result.ok() if isinstance(result, Ok) else _invalid(result)
            if path_regex is not None and not re.search(path_regex, operation.path):
                continue
            run.operations.append(operation.label)
            test()
    return run


def _path_and_query(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _invalid(result) -> Any:
    """A schema the fuzzer cannot read is a failure of its own, raised here."""
    raise result.err()
