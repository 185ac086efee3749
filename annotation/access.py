"""Explicit access checks for rating studies, shared by pages and the API.

404 for a study the user may not know exists (not a member); 403 for a member whose role
does not allow the action. A clinician acts only as a clinician, whatever other role old
memberships still give them (see services.membership.acting_roles).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.http import Http404

from annotation.models import Assignment, RatingStudy, StudyMembership
from annotation.selectors import rater_assignment as _rater_assignment_row
from annotation.selectors import study_with_roles
from annotation.services.membership import acting_roles

Role = StudyMembership.Role
# Who may read a study's aggregate progress and exports.
STUDY_READERS = (Role.COORDINATOR, Role.RESEARCHER)
#: Why a rater's ordinary item is closed to them (rater_assignment's calibration_open).
CALIBRATION_FIRST = (
    "Rate your calibration items first: your queue opens once you have compared your "
    "ratings with the reference."
)


def get_study_for_user(
    *, user: AbstractBaseUser, study_id: int, allowed_roles: Iterable[str]
) -> tuple[RatingStudy, set[str]]:
    """The study and the roles the user acts in, if one of them is in `allowed_roles`.

    Raises Http404 when the study does not exist or the user has no role in it, and
    PermissionDenied when they have a role but not an allowed one. A user who rates in the
    study acts only as its clinician: a coordinator or researcher role they also hold
    (memberships from before the rule) opens nothing that shows model names or others'
    ratings.
    """
    study, held = study_with_roles(user=user, study_id=study_id)
    if study is None:
        raise Http404("No such study.")
    roles = acting_roles(held)
    if not roles & set(allowed_roles):
        if held & set(allowed_roles):
            raise PermissionDenied(
                "You rate in this study, and a clinician of a study holds no other role in "
                "it: ask a coordinator or a site administrator to remove one of your roles."
            )
        raise PermissionDenied("Your role in this study does not allow this.")
    return study, roles


def rater_assignment(
    *, user: AbstractBaseUser, handle: str, study_id: int | None = None
) -> Assignment | None:
    """The user's own assignment with this handle (in this study, if given), with its study
    and item, if they act as a clinician of its study; None when they have no such
    assignment.

    The same answers as get_study_for_user(allowed_roles=[CLINICIAN]) and then the lookup,
    in one query where the user rates there (the hot path: the rating page and the submit):
    otherwise the full check runs and raises its 404 or 403.
    """
    assignment = _rater_assignment_row(user=user, handle=handle, study_id=study_id)
    if assignment is not None and assignment.rates_in_study:
        return assignment  # an active clinician acts as one (services.membership.acting_roles)
    if assignment is not None:
        study_id = assignment.study_id
    if study_id is not None:
        get_study_for_user(user=user, study_id=study_id, allowed_roles=[Role.CLINICIAN])
    return assignment
