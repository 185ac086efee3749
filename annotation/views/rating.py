"""The clinician's rating page: one assignment, the rubric, keyboard-first.

The page and its links name assignments by their opaque handles only (see
Assignment.handle): an id would follow import order, and so the model.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse

from annotation import selectors, services
from annotation.access import CALIBRATION_FIRST, Role, get_study_for_user, rater_assignment
from annotation.errors import AnnotationError
from annotation.models import Assignment, RatingStudy, RubricCriterion


def _parse_answers(criteria: list[RubricCriterion], data) -> dict[str, services.CriterionAnswer]:
    """Read the form: c-<key> (value), c-<key>-na (cannot assess), c-<key>-comment."""
    answers = {}
    for criterion in criteria:
        raw = data.get(f"c-{criterion.key}", "").strip()
        cannot = data.get(f"c-{criterion.key}-na") in ("on", "1", "true")
        value: int | None
        try:
            value = int(raw) if raw else None
        except ValueError:  # int() of what was typed: the rater's mistake, named at its field
            raise AnnotationError(
                f"value must be a whole number, got {raw!r}", field=criterion.key
            ) from None
        answers[criterion.key] = services.CriterionAnswer(
            value=None if cannot else value,
            cannot_assess=cannot,
            comment=data.get(f"c-{criterion.key}-comment", ""),
        )
    return answers


def _seconds(data) -> float:
    try:
        return max(0.0, float(data.get("time_spent", 0) or 0))
    except ValueError:
        return 0.0


@login_required
def resume(request: HttpRequest, study_id: int) -> HttpResponse:
    """Send the clinician to where they left off."""
    roles, handle = selectors.resume_target(user=request.user, study_id=study_id)
    if Role.CLINICIAN not in roles:  # not a clinician here: the full check's 404 or 403
        get_study_for_user(user=request.user, study_id=study_id, allowed_roles=[Role.CLINICIAN])
        raise Http404("No such study.")  # the check passed meanwhile: a role just granted
    if handle is None:
        return redirect("annotation:queue", study_id=study_id)
    return redirect("annotation:rate", study_id=study_id, handle=handle)


@login_required
def rate(request: HttpRequest, study_id: int, handle: str) -> HttpResponse:
    """Show one assignment; a POST submits it and moves on to the next unfinished one."""
    # The access check (404 for a study they are not in, 403 for another role) rides on the
    # assignment's read where the user rates there.
    assignment = rater_assignment(user=request.user, handle=handle, study_id=study_id)
    if assignment is None:
        raise Http404("No such item in your queue.")
    study = assignment.study
    if assignment.calibration_open and not assignment.is_calibration:
        messages.info(request, CALIBRATION_FIRST)
        return redirect("annotation:resume", study_id=study.pk)
    if request.method != "POST":
        return _rating_page(request, study, assignment)
    was_submitted = assignment.status == Assignment.Status.SUBMITTED
    criteria = [c for c, _ in selectors.rubric_answers(assignment=assignment)]
    try:
        services.submit_assignment(
            assignment_id=assignment.pk,
            clinician=request.user,
            answers=_parse_answers(criteria, request.POST),
            time_spent_seconds=_seconds(request.POST),
        )
    except AnnotationError as exc:
        assignment.refresh_from_db()
        return _rating_page(request, study, assignment, posted=request.POST, errors=exc.as_dict())
    if assignment.is_calibration:
        return _after_calibration_submit(request, study, was_submitted)
    position = selectors.queue_position(assignment=assignment)
    # The next page confirms what the server now holds: a revision is easy to doubt.
    messages.success(
        request,
        f"Your revision of item {position.index} is saved."
        if was_submitted
        else f"Item {position.index} is submitted.",
    )
    if position.next_unfinished:
        return redirect("annotation:rate", study_id=study.pk, handle=position.next_unfinished)
    return redirect(reverse("annotation:queue", kwargs={"study_id": study.pk}) + "?done=1")


def _after_calibration_submit(
    request: HttpRequest, study: RatingStudy, was_submitted: bool
) -> HttpResponse:
    """The rater's next calibration item, or (all rated) how they compare with the
    reference, from where their queue opens."""
    handle = services.advance_calibration(study=study, clinician=request.user)
    messages.success(
        request,
        "Your revision is saved." if was_submitted else "Calibration item submitted.",
    )
    if handle is not None:
        return redirect("annotation:rate", study_id=study.pk, handle=handle)
    return redirect("annotation:my-calibration", study_id=study.pk)


def _rating_page(
    request: HttpRequest,
    study: RatingStudy,
    assignment: Assignment,
    *,
    posted: QueryDict | None = None,
    errors: dict[str, list[str]] | None = None,
) -> HttpResponse:
    """The page for one assignment; after a refused submit it shows what was posted, with
    each error beside its criterion (400)."""
    errors = errors or {}
    rubric = selectors.rubric_answers(assignment=assignment)
    criteria = [c for c, _ in rubric]
    view = selectors.rater_item(
        assignment=assignment,
        answers={c.key: stored.state() for c, stored in rubric if stored is not None},
    )
    rows = [_criterion_row(c, view.answers.get(c.key, {}), posted, errors) for c in criteria]
    keys = {c.key for c in criteria}
    position = selectors.queue_position(assignment=assignment)
    copy = position.copy
    return render(
        request,
        "annotation/rate.html",
        {
            "study": study,
            "item": view,
            "rows": rows,
            "position": position,
            "copy_label": f"Response {copy.letter} of this case" if copy else "",
            "copy_letter": copy.letter if copy else "",
            "keys": _legend_keys(criteria),
            "other_errors": {k: v for k, v in errors.items() if k not in keys},
            "locked": study.is_locked,
            # read with the assignment (hot_path.rater_assignment): no query of its own
            "calibration": getattr(assignment, "is_calibration", False),
        },
        status=400 if errors else 200,
    )


def _criterion_row(
    criterion: RubricCriterion,
    saved: dict[str, object],
    posted: QueryDict | None,
    errors: dict[str, list[str]],
) -> dict[str, object]:
    """One criterion of the form: its scale points with anchors, and the value to show (the
    posted one after a refused submit, else the saved one)."""
    key = criterion.key
    if posted is not None:
        saved = {
            "value": posted.get(f"c-{key}", ""),
            "cannot_assess": posted.get(f"c-{key}-na") in ("on", "1", "true"),
            "comment": posted.get(f"c-{key}-comment", ""),
        }
    return {
        "criterion": criterion,
        "points": [
            {"value": p, "anchor": criterion.anchors.get(str(p), "")}
            for p in range(criterion.scale_min, criterion.scale_max + 1)
        ],
        "value": "" if saved.get("value") in (None, "") else str(saved["value"]),
        "cannot_assess": bool(saved.get("cannot_assess")),
        "comment": saved.get("comment", ""),
        "errors": errors.get(key, []),
    }


def _legend_keys(criteria: list[RubricCriterion]) -> dict[str, object]:
    """The keys the legend lists: only those this rubric uses (a digit scores a point of the
    highlighted criterion's scale; x only where some criterion allows 'cannot assess')."""
    lows = [c.scale_min for c in criteria] or [1]
    highs = [c.scale_max for c in criteria] or [1]
    return {
        "digit_min": max(0, min(9, min(lows))),
        "digit_max": max(0, min(9, max(highs))),
        "cannot_assess": any(c.allow_cannot_assess for c in criteria),
    }
