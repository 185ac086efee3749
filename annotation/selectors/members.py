"""Reads about a study's members and the accounts that can be added to it."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q, QuerySet

from annotation.models import RatingStudy, StudyMembership


def study_members(*, study: RatingStudy) -> QuerySet[StudyMembership]:
    """Every membership of the study, active or not, by role and pseudonym."""
    return (
        StudyMembership.objects.filter(study=study)
        .select_related("user")
        .order_by("role", "pseudonym")
    )


def study_member(*, study: RatingStudy, membership_id: object) -> StudyMembership | None:
    """One membership of this study (None for another study's or an unknown id)."""
    return StudyMembership.objects.filter(study=study, pk=membership_id).first()


def account_named(*, name: str) -> AbstractBaseUser | None:
    """The account with this username, else with this e-mail address (any case)."""
    return get_user_model().objects.filter(Q(username=name) | Q(email__iexact=name)).first()


def account_by_username(*, username: str) -> AbstractBaseUser | None:
    return get_user_model().objects.filter(username=username).first()
