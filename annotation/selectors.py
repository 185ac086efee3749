"""Reads for rating studies. Nothing here returns a model name to a clinician-facing caller."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Q, QuerySet

from annotation.models import Assignment, RatingStudy, StudyMembership

Role = StudyMembership.Role


def roles_in_study(*, user: AbstractBaseUser, study: RatingStudy) -> set[str]:
    if not user.is_authenticated:
        return set()
    return set(
        StudyMembership.objects.filter(study=study, user=user, is_active=True).values_list(
            "role", flat=True
        )
    )


def studies_for(*, user: AbstractBaseUser, role: str) -> QuerySet[RatingStudy]:
    return RatingStudy.objects.filter(
        memberships__user=user, memberships__role=role, memberships__is_active=True
    ).order_by("-created_at", "id")


@dataclass(frozen=True)
class QueueProgress:
    study: RatingStudy
    total: int
    submitted: int
    in_progress: int

    @property
    def remaining(self) -> int:
        return self.total - self.submitted

    @property
    def percent_done(self) -> int:
        return round(100 * self.submitted / self.total) if self.total else 100


def clinician_progress(*, user: AbstractBaseUser) -> list[QueueProgress]:
    """Per study the clinician rates: how much of their queue is done (one query)."""
    rows = (
        Assignment.objects.filter(
            clinician=user,
            study__memberships__user=user,
            study__memberships__role=Role.CLINICIAN,
            study__memberships__is_active=True,
        )
        .exclude(status=Assignment.Status.WITHDRAWN)
        .values("study")
        .annotate(
            total=Count("id"),
            submitted=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
            in_progress=Count("id", filter=Q(status=Assignment.Status.IN_PROGRESS)),
        )
    )
    counts = {r["study"]: r for r in rows}
    studies = studies_for(user=user, role=Role.CLINICIAN)
    return [
        QueueProgress(
            study=s,
            total=counts.get(s.pk, {}).get("total", 0),
            submitted=counts.get(s.pk, {}).get("submitted", 0),
            in_progress=counts.get(s.pk, {}).get("in_progress", 0),
        )
        for s in studies
    ]


def clinician_queue(*, study: RatingStudy, user: AbstractBaseUser) -> QuerySet[Assignment]:
    """The clinician's own assignments in their own order. Items carry no model name here:
    only the fields a rater may see are loaded."""
    return (
        Assignment.objects.filter(study=study, clinician=user)
        .exclude(status=Assignment.Status.WITHDRAWN)
        .select_related("item", "item__taxonomy_node")
        .only(
            "id",
            "position",
            "status",
            "flagged",
            "submitted_at",
            "time_spent_seconds",
            "item__id",
            "item__input_text",
            "item__taxonomy_node__name",
            "study_id",
            "clinician_id",
        )
        .order_by("position")
    )


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
