"""Explicit access checks for Delphi studies, shared by pages and exports.

A Delphi study has two roles: coordinators (DelphiCoordinator) and panelists (a Panelist
bound to a user who has not withdrawn). Someone with neither role gets 404 (they may not
know the study exists); someone with the other role gets 403.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.http import Http404

from delphi.models import DelphiStudy, Panelist


def roles_in_delphi_study(*, user: AbstractBaseUser, study: DelphiStudy) -> set[str]:
    if not user.is_authenticated:
        return set()
    roles = set()
    if study.coordinators.filter(user=user).exists():
        roles.add("coordinator")
    if study.panelists.filter(user=user, withdrawn_at__isnull=True).exists():
        roles.add("panelist")
    return roles


def _study_and_roles(*, user: AbstractBaseUser, study_id: int) -> tuple[DelphiStudy, set[str]]:
    study = DelphiStudy.objects.select_related("draft_taxonomy").filter(pk=study_id).first()
    if study is None:
        raise Http404("No such Delphi study.")
    roles = roles_in_delphi_study(user=user, study=study)
    if not roles:
        raise Http404("No such Delphi study.")
    return study, roles


def get_study_for_coordinator(*, user: AbstractBaseUser, study_id: int) -> DelphiStudy:
    study, roles = _study_and_roles(user=user, study_id=study_id)
    if "coordinator" not in roles:
        raise PermissionDenied("Only the study's coordinators may do this.")
    return study


def get_panelist_for_user(*, user: AbstractBaseUser, study_id: int) -> Panelist:
    study, roles = _study_and_roles(user=user, study_id=study_id)
    if "panelist" not in roles:
        raise PermissionDenied("Only panelists answer the rounds.")
    return study.panelists.select_related("study").get(user=user)
