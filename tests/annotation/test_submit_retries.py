"""A retried submit (same assignment, same answers, already submitted) changes nothing: not the
time on item, not the audit trail, not a timestamp; it is answered as the first submit was."""

from __future__ import annotations

import pytest
from django.db import connection
from rest_framework.test import APIClient

from annotation import services
from annotation.models import Assignment, AuditEvent
from tests.factories import make_study_with_members
from tests.support.threads import run_at_once

A = services.CriterionAnswer
ANSWERS = {"accuracy": A(value=4), "completeness": A(value=3), "clarity": A(value=5)}
PAYLOAD = {
    "answers": {"accuracy": {"value": 4}, "completeness": {"value": 3}, "clarity": {"value": 5}},
    "time_spent_seconds": 30,
}
STAMPS = ("time_spent_seconds", "started_at", "first_submitted_at", "submitted_at", "updated_at")


def stamps(assignment_id: int) -> tuple:
    return Assignment.objects.filter(pk=assignment_id).values_list(*STAMPS).get()


def first_assignment(setup) -> Assignment:
    clinician = setup.clinicians[0]
    return Assignment.objects.filter(clinician=clinician).order_by("position").first()


def test_repeated_submits_keep_time_audit_and_timestamps(setup):
    a = first_assignment(setup)
    clinician = setup.clinicians[0]
    services.submit_assignment(
        assignment_id=a.pk, clinician=clinician, answers=ANSWERS, time_spent_seconds=30
    )
    after_first = stamps(a.pk)
    events = AuditEvent.objects.count()

    for _ in range(5):
        services.submit_assignment(
            assignment_id=a.pk, clinician=clinician, answers=ANSWERS, time_spent_seconds=30
        )

    assert stamps(a.pk) == after_first
    assert after_first[0] == 30
    assert AuditEvent.objects.count() == events


def test_a_retried_api_submit_is_answered_as_the_first(setup):
    a = first_assignment(setup)
    client = APIClient()
    client.force_authenticate(setup.clinicians[0])
    url = f"/api/assignments/{a.handle}/submit/"

    first = client.post(url, PAYLOAD, format="json")
    retries = [client.post(url, PAYLOAD, format="json") for _ in range(3)]

    assert first.status_code == 200, first.json()
    assert [r.status_code for r in retries] == [200, 200, 200]
    assert all(r.json() == first.json() for r in retries)
    assert stamps(a.pk)[0] == 30


def test_a_revision_after_a_submit_still_counts_its_time(setup):
    a = first_assignment(setup)
    clinician = setup.clinicians[0]
    services.submit_assignment(
        assignment_id=a.pk, clinician=clinician, answers=ANSWERS, time_spent_seconds=30
    )
    revised = {**ANSWERS, "accuracy": A(value=2)}
    services.submit_assignment(
        assignment_id=a.pk, clinician=clinician, answers=revised, time_spent_seconds=12
    )
    assert stamps(a.pk)[0] == 42
    assert AuditEvent.objects.filter(action="rating.revise").count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_twenty_parallel_identical_submits_count_the_time_once():
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL; CI runs this with DATABASE_URL set")
    setup = make_study_with_members(n_items=4, n_clinicians=2, k=2)
    clinician = setup.clinicians[0]
    a = Assignment.objects.filter(clinician=clinician).order_by("position").first()

    def submit() -> tuple:
        done = services.submit_assignment(
            assignment_id=a.pk, clinician=clinician, answers=ANSWERS, time_spent_seconds=30
        )
        return tuple(getattr(done, f) for f in STAMPS)

    returned = run_at_once(submit, threads=20)
    final = stamps(a.pk)
    assert final[0] == 30
    assert set(returned) == {final}  # every submit answered with the same, stored state
    assert AuditEvent.objects.filter(action="rating.submit", study=a.study).count() == 3
    assert not AuditEvent.objects.filter(action="rating.revise").exists()
