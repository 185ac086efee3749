"""Reads about a study's members and the accounts that can be added to it."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q, QuerySet

from annotation.models import RatingStudy, StudyMembership
from annotation.services.membership import role_clash


def study_members(*, study: RatingStudy) -> QuerySet[StudyMembership]:
    """Every membership of the study, active or not, by role and pseudonym."""
    return (
        StudyMembership.objects.filter(study=study)
        .select_related("user")
        .order_by("role", "pseudonym")
    )


def role_clashes(*, study: RatingStudy) -> list[str]:
    """Why each active clinician who also holds another role breaks the blinding rule.

    Only memberships from before the rule can do so (the service refuses new ones). Access
    treats such a user as a clinician only; the coordinators see the list to resolve it.
    """
    clinicians = StudyMembership.objects.filter(
        study=study, role=StudyMembership.Role.CLINICIAN, is_active=True
    )
    doubled = (
        clinicians.filter(
            user__study_memberships__study=study,
            user__study_memberships__role__in=[
                StudyMembership.Role.COORDINATOR,
                StudyMembership.Role.RESEARCHER,
            ],
        )
        .select_related("user")
        .distinct()
        .order_by("pseudonym")
    )
    reasons = (role_clash(study=study, user=m.user, role=m.role, ignore=m.pk) for m in doubled)
    return [r for r in reasons if r]


def study_member(*, study: RatingStudy, membership_id: object) -> StudyMembership | None:
    """One membership of this study (None for another study's or an unknown id)."""
    return StudyMembership.objects.filter(study=study, pk=membership_id).first()


def account_named(*, name: str) -> AbstractBaseUser | None:
    """The account with this username, else with this e-mail address (any case)."""
    return get_user_model().objects.filter(Q(username=name) | Q(email__iexact=name)).first()


def account_by_username(*, username: str) -> AbstractBaseUser | None:
    return get_user_model().objects.filter(username=username).first()
