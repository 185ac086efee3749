"""Writes of a clinician's work: drafts, submissions and revisions of ratings, and flags.

Every changed value of a submitted rating writes an audit row (old, new, who).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation import audit
from annotation.errors import AnnotationError, AnswersError
from annotation.locking import locked_message
from annotation.models import Assignment, AuditEvent, Rating, RatingStudy, RubricCriterion
from annotation.selectors.hot_path import StoredAnswer, locked_assignment, rubric_answers
from annotation.services.insert import insert_rows
from annotation.services.watch import watch_after_commit
from medhelm_site.common.text_limits import checked_column_text, column_max_length, text_problem


@dataclass(frozen=True)
class CriterionAnswer:
    value: int | None = None
    cannot_assess: bool = False
    comment: str = ""


def _check_answers(
    *,
    study: RatingStudy,
    criteria: Mapping[str, RubricCriterion],
    answers: Mapping[str, CriterionAnswer],
    complete: bool,
) -> None:
    errors: dict[str, str] = {}
    for key, answer in answers.items():
        criterion = criteria.get(key)
        if criterion is None:
            errors[key] = f"unknown criterion {key!r}; this study has {sorted(criteria)}"
            continue
        problem = text_problem(answer.comment, max_length=column_max_length(Rating, "comment"))
        if problem is not None:
            errors[key] = f"the comment {problem}"
            continue
        if answer.cannot_assess:
            if not criterion.allow_cannot_assess:
                errors[key] = "this criterion does not allow 'cannot assess'"
            elif answer.value is not None:
                errors[key] = "give either a value or 'cannot assess', not both"
            continue
        if answer.value is None:
            if complete:
                errors[key] = "a value is required to submit"
            continue
        if isinstance(answer.value, bool) or not isinstance(answer.value, int):
            errors[key] = f"value must be a whole number, got {answer.value!r}"
        elif not criterion.scale_min <= answer.value <= criterion.scale_max:
            errors[key] = (
                f"value {answer.value} is outside the scale {criterion.scale_min}..{criterion.scale_max}"
            )
        elif (
            complete
            and study.comment_required_at_or_below is not None
            and answer.value <= study.comment_required_at_or_below
            and not answer.comment.strip()
        ):
            errors[key] = (
                f"a comment is required for a score of {study.comment_required_at_or_below} or lower"
            )
    if complete:
        for key in criteria:
            if key not in answers:
                errors.setdefault(key, "missing: every criterion needs a value to submit")
    if errors:
        raise AnswersError(errors)


def _lock_assignment(assignment_id: int, clinician: AbstractBaseUser) -> Assignment:
    """Lock the assignment row (with the study's lock read under a share lock, so that a
    submit cannot commit after the study was locked: selectors.locked_assignment)."""
    found = locked_assignment(assignment_id=assignment_id)
    if found is None or found[0].clinician_id != clinician.pk:
        raise AnnotationError("this item is not assigned to you", field="assignment")
    assignment, study_locked = found
    if assignment.status == Assignment.Status.WITHDRAWN:
        raise AnnotationError("this assignment was withdrawn", field="assignment")
    if study_locked:
        raise AnnotationError(locked_message(what="ratings"), field="study")
    return assignment


@dataclass(frozen=True)
class _Rubric:
    """The study's criteria by key (rubric order) and the assignment's stored ratings by
    criterion id, read in one query under the assignment's lock."""

    criteria: dict[str, RubricCriterion]
    existing: dict[int, StoredAnswer]

    def answers_after(self, answers: Mapping[str, CriterionAnswer]) -> dict[str, dict[str, object]]:
        """What the assignment holds once `answers` are written, by key in rubric order."""
        held: dict[str, dict[str, object]] = {}
        for key, criterion in self.criteria.items():
            if key in answers:
                a = answers[key]
                held[key] = {
                    "value": a.value,
                    "cannot_assess": a.cannot_assess,
                    "comment": a.comment,
                }
            elif criterion.pk in self.existing:
                held[key] = self.existing[criterion.pk].state()
        return held


def _read_rubric(assignment: Assignment) -> _Rubric:
    criteria: dict[str, RubricCriterion] = {}
    existing: dict[int, StoredAnswer] = {}
    for criterion, stored in rubric_answers(assignment=assignment):
        criteria[criterion.key] = criterion
        if stored is not None:
            existing[criterion.pk] = stored
    return _Rubric(criteria=criteria, existing=existing)


def _write_answers(
    assignment: Assignment,
    rubric: _Rubric,
    answers: Mapping[str, CriterionAnswer],
    *,
    submitting: bool,
    now: Any,
) -> list[tuple[Rating, dict[str, Any] | None, dict[str, Any]]]:
    """Create or update the assignment's rating rows (the assignment row is locked, so no
    one else writes them meanwhile; the unique constraint is the last guard). Returns
    (rating, state before, state after) for each answer that changed something."""
    criteria, existing = rubric.criteria, rubric.existing
    changed = []
    to_create = []
    for key, answer in answers.items():
        criterion = criteria[key]
        after = {
            "value": answer.value,
            "cannot_assess": answer.cannot_assess,
            "comment": answer.comment,
        }
        stored = existing.get(criterion.pk)
        if stored is None:
            rating = Rating(assignment=assignment, criterion=criterion, **after)
            if submitting:
                rating.first_value, rating.first_cannot_assess = answer.value, answer.cannot_assess
                rating.first_submitted_at = now
            to_create.append(rating)
            changed.append((rating, None, after))
            continue
        before = stored.state()
        first_time = submitting and not stored.first_submitted
        if before == after and not first_time:
            continue
        # Only the changed columns are written (an UPDATE by primary key).
        rating = Rating(pk=stored.rating_id, assignment=assignment, criterion=criterion, **after)
        fields = ["value", "cannot_assess", "comment", "updated_at"]
        if first_time:
            rating.first_value, rating.first_cannot_assess = answer.value, answer.cannot_assess
            rating.first_submitted_at = now
            fields += ["first_value", "first_cannot_assess", "first_submitted_at"]
        rating.save(update_fields=fields)
        changed.append((rating, None if first_time else before, after))
    insert_rows(to_create)
    return changed


@transaction.atomic
def save_draft(
    *,
    assignment_id: int,
    clinician: AbstractBaseUser,
    answers: Mapping[str, CriterionAnswer],
    time_spent_seconds: float = 0.0,
) -> Assignment:
    """Autosave: keep what the clinician has entered so far.

    A submitted rating changes only by submitting again (which writes its audit rows): a
    draft that would change it is refused (AnnotationError on "answers"), so that no client
    shows it as saved. A draft without changes (e.g. no answers) only adds time on item.
    """
    assignment = _lock_assignment(assignment_id, clinician)
    rubric = _read_rubric(assignment)
    _check_answers(
        study=assignment.study, criteria=rubric.criteria, answers=answers, complete=False
    )
    seconds = _checked_seconds(time_spent_seconds)
    if assignment.status == Assignment.Status.SUBMITTED:
        _refuse_changes_to_submitted(assignment, answers)
        # Only time on item changes; updated_at stays, since it versions the answers (the
        # page's local copy of a revision in progress is tied to it).
        Assignment.objects.filter(pk=assignment.pk).update(
            time_spent_seconds=F("time_spent_seconds") + seconds
        )
        assignment.refresh_from_db(fields=["time_spent_seconds"])
        return assignment
    _write_answers(assignment, rubric, answers, submitting=False, now=timezone.now())
    assignment.status = Assignment.Status.IN_PROGRESS
    assignment.started_at = assignment.started_at or timezone.now()
    assignment.time_spent_seconds += seconds
    assignment.save(update_fields=["status", "started_at", "time_spent_seconds", "updated_at"])
    return assignment


def _refuse_changes_to_submitted(
    assignment: Assignment, answers: Mapping[str, CriterionAnswer]
) -> None:
    stored = {
        key: {"value": value, "cannot_assess": cannot_assess, "comment": comment}
        for key, value, cannot_assess, comment in Rating.objects.filter(
            assignment=assignment
        ).values_list("criterion__key", "value", "cannot_assess", "comment")
    }
    empty = {"value": None, "cannot_assess": False, "comment": ""}  # a criterion without a row
    changed = sorted(
        key
        for key, answer in answers.items()
        if stored.get(key, empty)
        != {"value": answer.value, "cannot_assess": answer.cannot_assess, "comment": answer.comment}
    )
    if changed:
        raise AnnotationError(
            f"this rating is submitted: a draft cannot change it ({', '.join(changed)}); "
            "submit the revision to replace your submitted rating",
            field="answers",
        )


def _checked_seconds(seconds: float) -> float:
    if seconds < 0:
        raise AnnotationError("cannot be negative", field="time_spent_seconds")
    # A tab left open overnight is not rating time: cap one report at an hour.
    return min(float(seconds), 3600.0)


@dataclass(frozen=True)
class Submitted:
    """A submitted assignment and the answers it now holds, by criterion key in rubric
    order (what selectors.rater_item would read back)."""

    assignment: Assignment
    answers: dict[str, dict[str, object]]


def submit_assignment(
    *,
    assignment_id: int,
    clinician: AbstractBaseUser,
    answers: Mapping[str, CriterionAnswer],
    time_spent_seconds: float = 0.0,
) -> Assignment:
    """Submit (or revise) all criteria of one assignment at once (see submit_answers)."""
    return submit_answers(
        assignment_id=assignment_id,
        clinician=clinician,
        answers=answers,
        time_spent_seconds=time_spent_seconds,
    ).assignment


@transaction.atomic
def submit_answers(
    *,
    assignment_id: int,
    clinician: AbstractBaseUser,
    answers: Mapping[str, CriterionAnswer],
    time_spent_seconds: float = 0.0,
) -> Submitted:
    """Submit (or revise) all criteria of one assignment at once.

    Idempotent: a repeat of a submit (the same answers to an assignment already submitted,
    e.g. a retried request, a double click, a second tab) is a retry: it changes nothing, not
    the time on item (the first submit counted it), the audit trail or any timestamp, and
    returns the assignment as stored. Every changed value of an already submitted rating
    writes an audit row (old, new, who).
    """
    assignment = _lock_assignment(assignment_id, clinician)
    study = assignment.study
    rubric = _read_rubric(assignment)
    _check_answers(study=study, criteria=rubric.criteria, answers=answers, complete=True)
    seconds = _checked_seconds(time_spent_seconds)
    now = timezone.now()
    was_submitted = assignment.status == Assignment.Status.SUBMITTED
    held = rubric.answers_after(answers)
    changes = _write_answers(assignment, rubric, answers, submitting=True, now=now)
    if was_submitted and not changes:
        # A retry: the row is locked and current, so this is what it holds.
        return Submitted(assignment=assignment, answers=held)
    insert_rows(
        [
            AuditEvent(
                actor=clinician,
                study=study,
                action="rating.revise" if was_submitted and before is not None else "rating.submit",
                target_type="Rating",
                target_id=str(rating.pk),
                before=before,
                after=after,
            )
            for rating, before, after in changes
            if before is None or was_submitted
        ]
    )
    assignment.status = Assignment.Status.SUBMITTED
    assignment.started_at = assignment.started_at or now
    assignment.first_submitted_at = assignment.first_submitted_at or now
    assignment.submitted_at = now
    assignment.time_spent_seconds += seconds
    assignment.save(
        update_fields=[
            "status",
            "started_at",
            "first_submitted_at",
            "submitted_at",
            "time_spent_seconds",
            "updated_at",
        ]
    )
    # Agreement so far is refreshed in the background once this commits (debounced).
    watch_after_commit(study_id=study.pk)
    return Submitted(assignment=assignment, answers=held)


# --- coordinator actions -------------------------------------------------------------------


@transaction.atomic
def flag_assignment(
    *, assignment_id: int, clinician: AbstractBaseUser, flagged: bool, reason: str = ""
) -> Assignment:
    """A clinician flags (or unflags) an item for the coordinator, with a reason."""
    checked_column_text(
        reason, model=Assignment, column="flag_reason", error=AnnotationError, field="reason"
    )
    assignment = _lock_assignment(assignment_id, clinician)
    if flagged and not reason.strip():
        raise AnnotationError("say why you flag this item", field="reason")
    before = {"flagged": assignment.flagged, "reason": assignment.flag_reason}
    assignment.flagged = flagged
    assignment.flag_reason = reason.strip() if flagged else ""
    after = {"flagged": assignment.flagged, "reason": assignment.flag_reason}
    if before != after:
        # A new flag, or none, is no longer the one a coordinator resolved (services.flags).
        assignment.flag_resolved_at = assignment.flag_resolved_by = None
        assignment.flag_resolution = ""
        assignment.save(
            update_fields=[
                "flagged",
                "flag_reason",
                "flag_resolved_at",
                "flag_resolved_by",
                "flag_resolution",
                "updated_at",
            ]
        )
        audit.record(
            actor=clinician,
            action="assignment.flag" if flagged else "assignment.unflag",
            target=assignment,
            study=assignment.study,
            before=before,
            after=after,
        )
    return assignment
