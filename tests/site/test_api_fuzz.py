"""The whole API, fuzzed from its OpenAPI schema for every role, answers no 5xx.

schemathesis reads /api/schema/ (drf-spectacular) and sends each operation its schema's
examples, boundary cases and fuzzed requests (valid and invalid data), reproducibly
(derandomized), as each role with real objects to reach (tests/support/api_fuzz.py). A
failure lists every request that got a server error: method, path and query, status, body.
"""

from __future__ import annotations

import pytest

from annotation import api as annotation_api
from tests.support.api_fuzz import ROLES, fuzz_api, seed_world

# Fuzzed cases per operation, on top of the examples and coverage phases. At 50 the run
# found the unbounded `limit` (a 500 on /items/ before it was capped); the five roles
# together take about a minute on two cores.
MAX_EXAMPLES = 50

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture
def world(settings):
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "localhost"]  # the WSGI client's host
    return seed_world()


@pytest.mark.parametrize("role", ROLES)
def test_no_operation_answers_a_server_error(world, role):
    run = fuzz_api(world=world, role=role, max_examples=MAX_EXAMPLES)
    print(f"{role}: {len(run.operations)} operations, {run.requests} requests, {run.statuses}")
    # Every app's API is in the schema and was reached.
    for path in (
        "/api/studies/{study_id}/members/",
        "/api/studies/{study_id}/agreement/reports/",
        "/delphi/{study_id}/round/draft/",
    ):
        assert any(label.endswith(f" {path}") for label in run.operations), path
    # A role with a login got past authentication with real objects, not only 401s and 404s.
    successes = sum(n for status, n in run.statuses.items() if 200 <= status < 300)
    assert (successes > 0) == (role != "anonymous"), run.statuses
    listed = "\n\n".join(str(error) for error in run.server_errors)
    assert not run.server_errors, f"{len(run.server_errors)} server errors as {role}:\n{listed}"


def test_the_run_lists_every_server_error_with_method_path_status_and_body(world, monkeypatch):
    """The harness itself: a view that fails is reported, once per request, not hidden."""

    def broken(self):
        raise RuntimeError("criteria are broken")

    monkeypatch.setattr(annotation_api.CriteriaApi, "get_queryset", broken)
    run = fuzz_api(world=world, role="coordinator", max_examples=5, path_regex="/criteria/$")
    assert run.operations == ["GET /api/studies/{study_id}/criteria/"]
    assert run.server_errors and len(run.server_errors) == run.statuses[500]
    first = run.server_errors[0]
    assert (first.method, first.status) == ("GET", 500)
    assert first.path.startswith(f"/api/studies/{world.parameters['study_id']}/criteria/")
    assert "Server Error (500)" in first.body
