"""The rating hot path's queries, pinned: the resume redirect, the rating page and the submit
are what bench/bench_rating.py loads with 50 clinicians, and each query there is a round trip
and ORM work on a busy server. A change that adds one fails here and says which request.

Counts are per request through the test client, inside the test's transaction (so the
submit's transaction shows as SAVEPOINT and RELEASE on SQLite and PostgreSQL alike).
"""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from annotation import services
from annotation.models import AgreementWatch, Assignment, AuditEvent, Rating
from medhelm_site.accounts.services import create_token
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
# After the submit's transaction commits, the agreement watch's debounce (issue 19): while a
# refresh is already queued, as it is in any burst of ratings, an UPDATE that claims nothing
# and the watch row's read (annotation.services.watch.request_watch_refresh). The bench,
# whose transactions commit, counts these two with the submit.
WATCH_BURST_QUERIES = 2

ANSWERS = {"accuracy": {"value": 4}, "completeness": {"value": 3}, "clarity": {"value": 5}}


@pytest.fixture
def rater(client, db):
    setup = make_study_with_members(n_items=8, n_clinicians=2, k=2)
    clinician = setup.clinicians[0]
    client.force_login(clinician)
    # The idle-session clock is written at most once a minute (medhelm_site.accounts
    # middleware): the first request after the login writes it, as it would a minute apart
    # in the bench; the counts below are of the requests in between.
    client.get("/")
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
    token = create_token(user=clinician)[1]
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


def test_submit_in_a_burst_adds_the_watch_debounce_after_commit(
    client, rater, django_assert_num_queries, django_capture_on_commit_callbacks
):
    setup, clinician, mine = rater
    queued_at = timezone.now()
    AgreementWatch.objects.create(study=setup.study, requested_at=queued_at)
    token = create_token(user=clinician)[1]
    with django_capture_on_commit_callbacks() as callbacks:
        response = _submit(client, mine[0].handle, token)
    assert response.status_code == 200, response.content
    with django_assert_num_queries(WATCH_BURST_QUERIES):
        for callback in callbacks:
            callback()
    # Still the one refresh queued before: the burst did not queue another.
    assert AgreementWatch.objects.get(study=setup.study).requested_at == queued_at


def test_retry_and_revision_answers_match_a_fresh_read(client, rater):
    _, clinician, mine = rater
    token = create_token(user=clinician)[1]
    handle = mine[1].handle
    first = _submit(client, handle, token)
    retry = _submit(client, handle, token)
    assert retry.json() == first.json()
    revised = _submit(client, handle, token, answers={**ANSWERS, "clarity": {"value": 1}})
    fresh = client.get(f"/api/assignments/{handle}/", HTTP_AUTHORIZATION=f"Token {token}")
    assert revised.status_code == 200 and revised.json() == fresh.json()
    assert revised.json()["answers"]["clarity"]["value"] == 1
    assert AuditEvent.objects.filter(action="rating.revise", actor=clinician).count() == 1
