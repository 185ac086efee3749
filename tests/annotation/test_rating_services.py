"""Rules for drafts, submissions, revisions, flags and locks (service layer)."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.errors import AnnotationError
from annotation.models import Assignment, AuditEvent, Rating
from tests.factories import FULL_ANSWERS, make_study_with_members

A = services.CriterionAnswer


def first_assignment(setup, clinician_index=0) -> Assignment:
    return (
        Assignment.objects.filter(clinician=setup.clinicians[clinician_index])
        .order_by("position")
        .first()
    )


def test_submit_stores_one_rating_per_criterion_with_first_values(setup):
    a = first_assignment(setup)
    services.submit_assignment(
        assignment_id=a.pk,
        clinician=setup.clinicians[0],
        answers=FULL_ANSWERS,
        time_spent_seconds=42,
    )
    a.refresh_from_db()
    assert (
        a.status == "submitted" and a.time_spent_seconds == 42 and a.first_submitted_at is not None
    )
    ratings = {r.criterion.key: r for r in a.ratings.select_related("criterion")}
    assert {k: r.value for k, r in ratings.items()} == {
        "accuracy": 4,
        "completeness": 3,
        "clarity": 5,
    }
    assert all(r.first_value == r.value and r.first_submitted_at for r in ratings.values())


def test_submitting_the_same_answers_again_changes_nothing(setup):
    a = first_assignment(setup)
    for _ in range(3):
        services.submit_assignment(
            assignment_id=a.pk, clinician=setup.clinicians[0], answers=FULL_ANSWERS
        )
    assert Rating.objects.filter(assignment=a).count() == 3
    assert AuditEvent.objects.filter(action="rating.revise").count() == 0
    assert AuditEvent.objects.filter(action="rating.submit").count() == 3  # one per criterion, once


def test_a_revision_keeps_the_first_value_and_writes_an_audit_row(setup):
    a = first_assignment(setup)
    clinician = setup.clinicians[0]
    services.submit_assignment(assignment_id=a.pk, clinician=clinician, answers=FULL_ANSWERS)
    services.submit_assignment(
        assignment_id=a.pk,
        clinician=clinician,
        answers={**FULL_ANSWERS, "accuracy": A(value=2, comment="missed a dose error")},
    )
    r = Rating.objects.get(assignment=a, criterion__key="accuracy")
    assert (r.first_value, r.value, r.comment) == (4, 2, "missed a dose error")
    event = AuditEvent.objects.get(action="rating.revise")
    assert event.actor == clinician and event.target_id == str(r.pk)
    assert event.before["value"] == 4 and event.after["value"] == 2


def test_a_draft_saves_partial_answers_and_marks_the_assignment_started(setup):
    a = first_assignment(setup)
    services.save_draft(
        assignment_id=a.pk,
        clinician=setup.clinicians[0],
        answers={"accuracy": A(value=3)},
        time_spent_seconds=5,
    )
    a.refresh_from_db()
    assert a.status == "in_progress" and a.started_at is not None and a.time_spent_seconds == 5
    assert Rating.objects.get(assignment=a).value == 3


def _stored(a: Assignment) -> tuple[dict, list, float]:
    """What a draft must not touch: the assignment's fields and rating rows, and time."""
    row = Assignment.objects.values("status", "updated_at", "submitted_at").get(pk=a.pk)
    ratings = list(Rating.objects.filter(assignment=a).order_by("pk").values())
    return row, ratings, Assignment.objects.get(pk=a.pk).time_spent_seconds


@pytest.mark.parametrize(
    "change",
    [
        {"accuracy": A(value=1)},
        {"accuracy": A(value=4, comment="a new comment")},
        {"completeness": A(value=None)},
        {**FULL_ANSWERS, "clarity": A(value=2)},
    ],
)
def test_a_draft_that_would_change_a_submitted_rating_is_refused_and_changes_nothing(setup, change):
    """Only a submit revises a submitted rating (with its audit rows): a draft that differs
    is refused, so that no client can take it for saved."""
    a = first_assignment(setup)
    clinician = setup.clinicians[0]
    services.submit_assignment(
        assignment_id=a.pk, clinician=clinician, answers=FULL_ANSWERS, time_spent_seconds=7
    )
    before = _stored(a)
    with pytest.raises(AnnotationError) as info:
        services.save_draft(
            assignment_id=a.pk, clinician=clinician, answers=change, time_spent_seconds=5
        )
    assert info.value.field == "answers"
    changed = sorted(k for k, v in change.items() if v != FULL_ANSWERS.get(k))
    assert "submitted" in info.value.message and "submit" in info.value.message
    assert all(key in info.value.message for key in changed)
    assert _stored(a) == before
    assert not AuditEvent.objects.filter(action="rating.revise").exists()


@pytest.mark.parametrize("answers", [{}, FULL_ANSWERS, {"accuracy": FULL_ANSWERS["accuracy"]}])
def test_a_draft_of_a_submitted_rating_without_changes_only_adds_time(setup, answers):
    """Time spent looking at (or abandoning) a revision still counts; the rating's version
    (updated_at, which ties the page's local copy to it) stays."""
    a = first_assignment(setup)
    clinician = setup.clinicians[0]
    services.submit_assignment(
        assignment_id=a.pk, clinician=clinician, answers=FULL_ANSWERS, time_spent_seconds=7
    )
    row, ratings, seconds = _stored(a)
    services.save_draft(
        assignment_id=a.pk, clinician=clinician, answers=answers, time_spent_seconds=5
    )
    assert _stored(a) == (row, ratings, seconds + 5)


@pytest.mark.parametrize(
    "answers,field,message",
    [
        ({**FULL_ANSWERS, "accuracy": A(value=6)}, "accuracy", "outside the scale 1..5"),
        ({**FULL_ANSWERS, "accuracy": A(value=0)}, "accuracy", "outside the scale 1..5"),
        ({**FULL_ANSWERS, "accuracy": A(value=3.5)}, "accuracy", "whole number"),
        ({**FULL_ANSWERS, "accuracy": A(value="4")}, "accuracy", "whole number"),
        ({**FULL_ANSWERS, "accuracy": A(value=True)}, "accuracy", "whole number"),
        ({**FULL_ANSWERS, "safety": A(value=3)}, "safety", "unknown criterion 'safety'"),
        ({"accuracy": A(value=3)}, "clarity", "missing"),
        (
            {**FULL_ANSWERS, "accuracy": A(cannot_assess=True)},
            "accuracy",
            "does not allow 'cannot assess'",
        ),
    ],
)
def test_bad_answers_are_refused_naming_the_field_and_nothing_is_saved(
    setup, answers, field, message
):
    a = first_assignment(setup)
    with pytest.raises(AnnotationError) as info:
        services.submit_assignment(
            assignment_id=a.pk, clinician=setup.clinicians[0], answers=answers
        )
    assert field in info.value.as_dict()
    assert message in " ".join(info.value.as_dict()[field])
    assert not Rating.objects.filter(assignment=a).exists()
    assert Assignment.objects.get(pk=a.pk).status == "pending"


def test_an_item_not_assigned_to_you_is_refused(setup):
    theirs = first_assignment(setup, clinician_index=1)
    with pytest.raises(AnnotationError, match="not assigned to you"):
        services.submit_assignment(
            assignment_id=theirs.pk, clinician=setup.clinicians[0], answers=FULL_ANSWERS
        )
    with pytest.raises(AnnotationError, match="not assigned to you"):
        services.save_draft(
            assignment_id=theirs.pk, clinician=setup.clinicians[0], answers=FULL_ANSWERS
        )
    assert not Rating.objects.exists()


def test_a_locked_study_refuses_changes_and_unlocking_allows_them_again(setup):
    a = first_assignment(setup)
    clinician = setup.clinicians[0]
    services.submit_assignment(assignment_id=a.pk, clinician=clinician, answers=FULL_ANSWERS)
    services.set_study_lock(study=setup.study, locked=True, actor=setup.coordinator)
    with pytest.raises(AnnotationError, match="locked"):
        services.submit_assignment(
            assignment_id=a.pk, clinician=clinician, answers={**FULL_ANSWERS, "clarity": A(value=1)}
        )
    with pytest.raises(AnnotationError, match="locked"):
        services.save_draft(
            assignment_id=a.pk, clinician=clinician, answers={"clarity": A(value=1)}
        )
    assert Rating.objects.get(assignment=a, criterion__key="clarity").value == 5
    services.set_study_lock(study=setup.study, locked=False, actor=setup.coordinator)
    services.submit_assignment(
        assignment_id=a.pk, clinician=clinician, answers={**FULL_ANSWERS, "clarity": A(value=1)}
    )
    assert Rating.objects.get(assignment=a, criterion__key="clarity").value == 1
    assert list(
        AuditEvent.objects.filter(action__startswith="study.").values_list("action", flat=True)
    ) == ["study.create", "study.lock", "study.unlock"]


def test_comment_required_for_low_scores(db):
    setup = make_study_with_members(comment_required_at_or_below=2)
    a = first_assignment(setup)
    low = {**FULL_ANSWERS, "accuracy": A(value=2)}
    with pytest.raises(AnnotationError, match="comment is required"):
        services.submit_assignment(assignment_id=a.pk, clinician=setup.clinicians[0], answers=low)
    services.submit_assignment(
        assignment_id=a.pk,
        clinician=setup.clinicians[0],
        answers={**low, "accuracy": A(value=2, comment="wrong dose")},
    )


def test_cannot_assess_where_the_criterion_allows_it(db):
    from tests.factories import MEDHELM_CRITERIA

    criteria = [dict(c) for c in MEDHELM_CRITERIA]
    criteria[2]["allow_cannot_assess"] = True
    setup = make_study_with_members(n_items=2, n_clinicians=2)
    services.update_study(study=setup.study, actor=setup.coordinator, changes={}, criteria=criteria)
    a = first_assignment(setup)
    services.submit_assignment(
        assignment_id=a.pk,
        clinician=setup.clinicians[0],
        answers={**FULL_ANSWERS, "clarity": A(cannot_assess=True)},
    )
    r = Rating.objects.get(assignment=a, criterion__key="clarity")
    assert r.cannot_assess and r.value is None
    with pytest.raises(AnnotationError, match="either a value or 'cannot assess'"):
        services.submit_assignment(
            assignment_id=a.pk,
            clinician=setup.clinicians[0],
            answers={**FULL_ANSWERS, "clarity": A(value=3, cannot_assess=True)},
        )


def test_flag_needs_a_reason_and_is_audited(setup):
    a = first_assignment(setup)
    with pytest.raises(AnnotationError, match="say why"):
        services.flag_assignment(
            assignment_id=a.pk, clinician=setup.clinicians[0], flagged=True, reason=" "
        )
    services.flag_assignment(
        assignment_id=a.pk, clinician=setup.clinicians[0], flagged=True, reason="reference is wrong"
    )
    a.refresh_from_db()
    assert a.flagged and a.flag_reason == "reference is wrong"
    assert AuditEvent.objects.filter(action="assignment.flag").count() == 1


def test_scales_freeze_once_ratings_exist(setup):
    from tests.factories import MEDHELM_CRITERIA

    a = first_assignment(setup)
    services.submit_assignment(
        assignment_id=a.pk, clinician=setup.clinicians[0], answers=FULL_ANSWERS
    )
    wider = [dict(c) for c in MEDHELM_CRITERIA]
    wider[0]["scale_max"] = 7
    with pytest.raises(AnnotationError, match="scale cannot change"):
        services.update_study(
            study=setup.study, actor=setup.coordinator, changes={}, criteria=wider
        )
    relabelled = [dict(c) for c in MEDHELM_CRITERIA]
    relabelled[0]["label"] = "Factual accuracy"
    services.update_study(
        study=setup.study, actor=setup.coordinator, changes={}, criteria=relabelled
    )
    assert setup.study.criteria.get(key="accuracy").label == "Factual accuracy"
