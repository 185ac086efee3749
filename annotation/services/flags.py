"""A coordinator's answer to a rater's flag: resolved with a note, audited.

A flag belongs to one assignment (services.ratings.flag_assignment). Resolving it keeps the
rater's reason and adds who resolved it, when and the note; the rater's next flag (or the
withdrawal of this one) clears the resolution. Every step is an AuditEvent, which is the
item's flag history (selectors.items.flag_history).
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from annotation import audit
from annotation.errors import AnnotationError
from annotation.models import Assignment, RatingStudy, StudyMembership
from annotation.selectors.studies import roles_in_study
from annotation.services.membership import acting_roles
from medhelm_site.common.text_limits import checked_column_text

RESOLVE_ACTION = "assignment.flag_resolve"


def _check_coordinator(*, study: RatingStudy, actor: AbstractBaseUser) -> None:
    """Only a coordinator of the study acting as one (a rater of the study never is)."""
    roles = acting_roles(roles_in_study(user=actor, study=study))
    if StudyMembership.Role.COORDINATOR not in roles:
        raise PermissionDenied("only a coordinator of this study may resolve its flags")


@transaction.atomic
def resolve_flag(
    *, study: RatingStudy, assignment_id: int, actor: AbstractBaseUser, note: str
) -> Assignment:
    """Resolve the open flag on one of the study's assignments with a note.

    Raises PermissionDenied for anyone but the study's coordinators, and AnnotationError for
    an empty note, an assignment of another study, one without a flag, or a flag resolved
    already (two coordinators answering at once: the second is told who answered first).
    """
    _check_coordinator(study=study, actor=actor)
    note = checked_column_text(
        note, model=Assignment, column="flag_resolution", error=AnnotationError, field="note"
    ).strip()
    if not note:
        raise AnnotationError("say how the flag was resolved", field="note")
    assignment = (
        Assignment.objects.select_for_update(of=("self",))
        .filter(pk=assignment_id, study=study)
        .first()
    )
    if assignment is None:
        raise AnnotationError("no such assignment in this study", field="assignment")
    if not assignment.flagged:
        raise AnnotationError(
            "this item is not flagged (the rater may have withdrawn the flag)", field="assignment"
        )
    if assignment.flag_resolved_at is not None:
        who = assignment.flag_resolved_by.get_username() if assignment.flag_resolved_by else "?"
        raise AnnotationError(
            f"this flag was resolved already, by {who} at "
            f"{assignment.flag_resolved_at:%Y-%m-%d %H:%M} UTC",
            field="assignment",
        )
    before = {"flagged": True, "reason": assignment.flag_reason, "resolved": False}
    assignment.flag_resolved_at = timezone.now()
    assignment.flag_resolved_by = actor
    assignment.flag_resolution = note
    # Not updated_at: it versions the rater's answers (their page's local copy is tied to it),
    # and a coordinator's note changes none of them.
    assignment.save(update_fields=["flag_resolved_at", "flag_resolved_by", "flag_resolution"])
    audit.record(
        actor=actor,
        action=RESOLVE_ACTION,
        target=assignment,
        study=study,
        before=before,
        after={"flagged": True, "reason": assignment.flag_reason, "resolved": True, "note": note},
    )
    return assignment
