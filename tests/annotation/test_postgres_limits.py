"""A rating comment or flag reason that the database cannot store (a NUL character) is refused
beside its criterion, on SQLite and on PostgreSQL alike, and the submitted rating stays as
it was. The rating page posts straight to the service, without a Django form."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.errors import AnnotationError
from annotation.models import Assignment, AuditEvent, Rating
from tests.factories import FULL_ANSWERS, TEST_PASSWORD, make_study_with_members

pytestmark = pytest.mark.django_db


@pytest.fixture
def submitted(db):
    """A clinician's first assignment, submitted with FULL_ANSWERS."""
    setup = make_study_with_members(n_items=2, n_clinicians=2, k=2)
    clinician = setup.clinicians[0]
    assignment = Assignment.objects.filter(clinician=clinician).order_by("position").first()
    services.submit_assignment(
        assignment_id=assignment.pk, clinician=clinician, answers=FULL_ANSWERS
    )
    return setup, clinician, assignment


def _stored(assignment):
    return sorted(
        Rating.objects.filter(assignment=assignment).values_list(
            "criterion__key", "value", "comment"
        )
    )


@pytest.mark.parametrize("comment", ["too\x00vague", "too\ud800vague"], ids=["nul", "surrogate"])
def test_a_revision_with_a_comment_the_database_cannot_store_changes_nothing(submitted, comment):
    _setup, clinician, assignment = submitted
    before, audit_rows = _stored(assignment), AuditEvent.objects.count()
    answers = {**FULL_ANSWERS, "clarity": services.CriterionAnswer(value=2, comment=comment)}
    for service in (services.submit_assignment, services.save_draft):
        with pytest.raises(AnnotationError, match=r"^clarity: the comment contains") as raised:
            service(assignment_id=assignment.pk, clinician=clinician, answers=answers)
        assert raised.value.field == "clarity"
    assert _stored(assignment) == before
    assert AuditEvent.objects.count() == audit_rows


def test_the_rating_page_shows_a_nul_comment_beside_its_criterion(client, submitted):
    setup, clinician, assignment = submitted
    before = _stored(assignment)
    client.login(username=clinician.username, password=TEST_PASSWORD)
    response = client.post(
        f"/studies/{setup.study.pk}/rate/{assignment.handle}/",
        {
            "c-accuracy": "1",
            "c-completeness": "3",
            "c-clarity": "5",
            "c-accuracy-comment": "wrong\x00dose",
        },
    )
    assert response.status_code == 400
    assert "the comment contains a NUL character" in response.content.decode()
    assert _stored(assignment) == before


def test_the_draft_api_refuses_a_nul_comment(client, submitted):
    _setup, clinician, assignment = submitted
    before = _stored(assignment)
    client.login(username=clinician.username, password=TEST_PASSWORD)
    response = client.post(
        f"/api/assignments/{assignment.handle}/draft/",
        {"answers": {"accuracy": {"value": 1, "comment": "wrong\x00dose"}}},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert _stored(assignment) == before


def test_a_flag_reason_with_a_nul_is_refused(submitted):
    _setup, clinician, assignment = submitted
    with pytest.raises(AnnotationError, match=r"^reason: contains a NUL character") as raised:
        services.flag_assignment(
            assignment_id=assignment.pk, clinician=clinician, flagged=True, reason="odd\x00"
        )
    assert raised.value.field == "reason"
    assignment.refresh_from_db()
    assert (assignment.flagged, assignment.flag_reason) == (False, "")


@pytest.mark.parametrize("username", ["u" * 300, "ann\x00"], ids=["longer-than-any-account", "nul"])
def test_the_members_form_refuses_what_no_account_can_be_named(client, username):
    setup = make_study_with_members(n_items=0, n_clinicians=1, k=1)
    client.login(username=setup.coordinator.username, password=TEST_PASSWORD)
    members = setup.study.memberships.count()
    response = client.post(
        f"/studies/{setup.study.pk}/members/", {"username": username, "role": "clinician"}
    )
    assert response.status_code == 200
    assert response.context["form"].errors["username"]
    assert setup.study.memberships.count() == members
