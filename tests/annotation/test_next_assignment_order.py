"""Where a rater goes next (annotation/selectors/next_assignment.py), pinned once through the
selectors that use it: the resume redirect's (resume_target), the calibration entry's
(next_calibration_handle) and the move after a submit (queue_position). Starting: calibration
items first, then a started draft, then the rater's own order; moving on: the next open one
in the rater's own order after this one, else the first."""

from __future__ import annotations

import pytest

from annotation import selectors, services
from annotation.models import Assignment
from tests.factories import FULL_ANSWERS, make_study_with_members

pytestmark = pytest.mark.django_db


def _draft(assignment: Assignment) -> None:
    services.save_draft(
        assignment_id=assignment.pk,
        clinician=assignment.clinician,
        answers={"accuracy": services.CriterionAnswer(value=3)},
    )


def _submit(assignment: Assignment) -> None:
    services.submit_assignment(
        assignment_id=assignment.pk, clinician=assignment.clinician, answers=FULL_ANSWERS
    )


def _queue(study, rater, *, calibration: bool) -> list[Assignment]:
    return list(
        Assignment.objects.filter(
            study=study, clinician=rater, item__calibration_item__isnull=not calibration
        )
        .exclude(status=Assignment.Status.WITHDRAWN)
        .select_related("clinician", "item")
        .order_by("position")
    )


def test_a_rater_starts_at_calibration_then_a_draft_then_their_order_and_moves_on_in_order():
    built = make_study_with_members(n_items=8, n_clinicians=2, k=2)
    study, rater = built.study, built.clinicians[0]
    queue = _queue(study, rater, calibration=False)
    assert len(queue) == 8
    _draft(queue[5])  # ordinary work started before calibration items were set
    for i in (1, 3, 6):  # dealt again at the end of the rater's order
        services.mark_calibration_item(
            study=study,
            item_id=queue[i].item_id,
            reference={"accuracy": 4},
            note="",
            actor=built.coordinator,
        )
    q0, q2, q4, q5, q7 = _queue(study, rater, calibration=False)
    c0, c1, c2 = _queue(study, rater, calibration=True)
    assert q7.position < c0.position < c1.position < c2.position
    assert q5.status == Assignment.Status.IN_PROGRESS

    def starts_at() -> str | None:
        return selectors.resume_target(user=rater, study_id=study.pk)[1]

    def calibration_starts_at() -> str | None:
        return selectors.next_calibration_handle(study=study, user=rater)

    def moves_on_from(assignment: Assignment) -> str | None:
        return selectors.queue_position(assignment=assignment).next_unfinished

    # calibration items first, before an ordinary draft and earlier positions
    assert starts_at() == calibration_starts_at() == c0.handle
    # among them a started draft first, before an earlier position
    _draft(c2)
    assert starts_at() == calibration_starts_at() == c2.handle
    # then their own order
    _submit(c2)
    assert starts_at() == calibration_starts_at() == c0.handle
    _submit(c0)
    assert starts_at() == calibration_starts_at() == c1.handle
    _submit(c1)
    assert calibration_starts_at() is None
    # calibration done: the ordinary draft before the earlier unstarted items
    assert starts_at() == q5.handle
    _submit(q5)
    assert starts_at() == q0.handle
    # Moving on after a submit takes the next open one in order, a draft or not, ...
    _draft(q2)
    assert starts_at() == q2.handle
    assert moves_on_from(q5) == q7.handle
    assert moves_on_from(q0) == q2.handle  # never the one the rater is on
    # ... else the first open one before it
    _submit(q7)
    assert moves_on_from(q7) == q0.handle
    for a in (q0, q2, q4):
        _submit(a)
    assert starts_at() is None and moves_on_from(q4) is None
