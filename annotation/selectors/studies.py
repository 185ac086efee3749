"""Reads about studies: who holds which role, and how far a study has got."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Q, QuerySet

from annotation.models import Assignment, Item, RatingStudy, StudyMembership

Role = StudyMembership.Role


def roles_in_study(*, user: AbstractBaseUser, study: RatingStudy) -> set[str]:
    if not user.is_authenticated:
        return set()
    return set(
        StudyMembership.objects.filter(study=study, user=user, is_active=True).values_list(
            "role", flat=True
        )
    )


def study_with_roles(
    *, user: AbstractBaseUser, study_id: int
) -> tuple[RatingStudy | None, set[str]]:
    """The study and the user's active roles in it, in one query; (None, set()) when the
    user holds no active role there (or the study does not exist: the same to them)."""
    if not user.is_authenticated:
        return None, set()
    memberships = list(
        StudyMembership.objects.filter(study_id=study_id, user=user, is_active=True)
        .select_related("study")
        .order_by()
    )
    if not memberships:
        return None, set()
    return memberships[0].study, {m.role for m in memberships}


def studies_for(*, user: AbstractBaseUser, role: str) -> QuerySet[RatingStudy]:
    return RatingStudy.objects.filter(
        memberships__user=user, memberships__role=role, memberships__is_active=True
    ).order_by("-created_at", "id")


def studies_with_any_role(*, user: AbstractBaseUser) -> QuerySet[RatingStudy]:
    """Studies in which the user holds any active role, newest first, criteria prefetched."""
    return (
        RatingStudy.objects.filter(memberships__user=user, memberships__is_active=True)
        .distinct()
        .prefetch_related("criteria")
        .order_by("-created_at", "id")
    )


def study_model_count(*, study: RatingStudy) -> int:
    """How many models answer the study's items (the outputs a paired case brings)."""
    return Item.objects.filter(study=study).values("model_name").distinct().count()


def study_items(*, study: RatingStudy) -> QuerySet[Item]:
    """The study's items with their model names: for coordinators only (raters are blinded)."""
    return Item.objects.filter(study=study).select_related("taxonomy_node").order_by("pk")


@dataclass(frozen=True)
class StudyProgress:
    items: int
    assignments: int
    submitted: int
    in_progress: int
    clinicians: int

    @property
    def percent_done(self) -> int:
        return round(100 * self.submitted / self.assignments) if self.assignments else 0


def study_progress(*, study: RatingStudy) -> StudyProgress:
    agg = (
        Assignment.objects.filter(study=study)
        .exclude(status=Assignment.Status.WITHDRAWN)
        .aggregate(
            assignments=Count("id"),
            submitted=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
            in_progress=Count("id", filter=Q(status=Assignment.Status.IN_PROGRESS)),
        )
    )
    return StudyProgress(
        items=study.items.count(),
        assignments=agg["assignments"],
        submitted=agg["submitted"],
        in_progress=agg["in_progress"],
        clinicians=study.memberships.filter(role=Role.CLINICIAN, is_active=True).count(),
    )
