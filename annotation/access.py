"""Explicit access checks for rating studies, shared by pages and the API.

404 for a study the user may not know exists (not a member); 403 for a member whose role
does not allow the action.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.http import Http404

from annotation.models import RatingStudy, StudyMembership
from annotation.selectors import roles_in_study

Role = StudyMembership.Role
# Who may read a study's aggregate progress and exports.
STUDY_READERS = (Role.COORDINATOR, Role.RESEARCHER)


def get_study_for_user(
    *, user: AbstractBaseUser, study_id: int, allowed_roles: Iterable[str]
) -> tuple[RatingStudy, set[str]]:
    """The study, if the user is a member with one of `allowed_roles`.

    Raises Http404 when the study does not exist or the user has no role in it, and
    PermissionDenied when they have a role but not an allowed one.
    """
    study = RatingStudy.objects.filter(pk=study_id).first()
    if study is None:
        raise Http404("No such study.")
    roles = roles_in_study(user=user, study=study)
    if not roles:
        raise Http404("No such study.")
    if not roles & set(allowed_roles):
        raise PermissionDenied("Your role in this study does not allow this.")
    return study, roles
