"""The rating hot path's queries, pinned: the resume redirect, the rating page and the submit
are what bench/bench_rating.py loads with 50 clinicians, and each query there is a round trip
and ORM work on a busy server. A change that adds one fails here and says which request.

Counts are per request through the test client, inside the test's transaction (so the
submit's transaction shows as SAVEPOINT and RELEASE on SQLite and PostgreSQL alike).
"""

from __future__ import annotations

import json

import pytest
from rest_framework.authtoken.models import Token

from annotation import services
from annotation.models import Assignment, AuditEvent, Rating
from tests.factories import FULL_ANSWERS, make_study_with_members

# session, user, the user's roles in the study with the resume point
RESUME_QUERIES = 3
# session, user, assignment with study, item and the access check, rubric with the stored
# answers, queue position with the case copy
PAGE_QUERIES = 5
# token with user, assignment with the access check, SAVEPOINT, the assignment's row lock
# with the study's share lock, rubric with the stored answers, ratings INSERT, audit INSERT,
# assignment UPDATE, RELEASE SAVEPOINT
SUBMIT_QUERIES = 9

ANSWERS = {"accuracy": {"value": 4}, "completeness": {"value": 3}, "clarity": {"value": 5}}


@pytest.fixture
def rater(client, db):
    setup = make_study_with_members(n_items=8, n_clinicians=2, k=2)
    clinician = setup.clinicians[0]
    client.force_login(clinician)
    mine = list(Assignment.objects.filter(clinician=clinician).order_by("position"))
    return setup, clinician, mine


def _submit(client, handle: str, token: str, answers=ANSWERS):
    return client.post(
        f"/api/assignments/{handle}/submit/",
        data=json.dumps({"answers": answers, "time_spent_seconds": 12.0}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {token}",
    )


def test_resume_redirect_queries(client, rater, django_assert_num_queries):
    setup, _, mine = rater
    with django_assert_num_queries(RESUME_QUERIES):
        response = client.get(f"/studies/{setup.study.pk}/rate/")
    assert response.status_code == 302 and response["Location"].endswith(f"/{mine[0].handle}/")


@pytest.mark.parametrize("state", ["new", "draft", "submitted"])
def test_rating_page_queries(client, rater, state, django_assert_num_queries):
    setup, clinician, mine = rater
    assignment = mine[2]
    if state == "draft":
        services.save_draft(
            assignment_id=assignment.pk,
            clinician=clinician,
            answers={"accuracy": services.CriterionAnswer(value=2, comment="kept")},
        )
    elif state == "submitted":
        services.submit_assignment(
            assignment_id=assignment.pk, clinician=clinician, answers=FULL_ANSWERS
        )
    with django_assert_num_queries(PAGE_QUERIES):
        response = client.get(f"/studies/{setup.study.pk}/rate/{assignment.handle}/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "Item <strong>3</strong> of 8" in body  # the position came from the one query
    if state == "draft":
        assert "kept" in body


def test_submit_queries_and_answer(client, rater, django_assert_num_queries):
    _, clinician, mine = rater
    token = Token.objects.create(user=clinician).key
    with django_assert_num_queries(SUBMIT_QUERIES):
        response = _submit(client, mine[0].handle, token)
    assert response.status_code == 200, response.content
    # The answer is built from what was written: it equals what a fresh read returns.
    fresh = client.get(f"/api/assignments/{mine[0].handle}/", HTTP_AUTHORIZATION=f"Token {token}")
    assert response.json() == fresh.json()
    assert response.json()["answers"] == {
        key: {"value": a["value"], "cannot_assess": False, "comment": ""}
        for key, a in ANSWERS.items()
    }
    assert Rating.objects.filter(assignment=mine[0]).count() == 3
    assert AuditEvent.objects.filter(action="rating.submit", actor=clinician).count() == 3


def test_retry_and_revision_answers_match_a_fresh_read(client, rater):
    _, clinician, mine = rater
    token = Token.objects.create(user=clinician).key
    handle = mine[1].handle
    first = _submit(client, handle, token)
    retry = _submit(client, handle, token)
    assert retry.json() == first.json()
    revised = _submit(client, handle, token, answers={**ANSWERS, "clarity": {"value": 1}})
    fresh = client.get(f"/api/assignments/{handle}/", HTTP_AUTHORIZATION=f"Token {token}")
    assert revised.status_code == 200 and revised.json() == fresh.json()
    assert revised.json()["answers"]["clarity"]["value"] == 1
    assert AuditEvent.objects.filter(action="rating.revise", actor=clinician).count() == 1
