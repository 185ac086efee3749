"""Reads for the coordinators' and researchers' dashboard: progress, gaps and flags.

Raters are named by their study pseudonym (and, for coordinators, their username) only.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, F, Q

from annotation.models import (
    AgreementWatch,
    Assignment,
    Rating,
    RatingStudy,
    StudyMembership,
)
from annotation.selectors.raters import clinician_labels
from annotation.selectors.sampling import items_to_rate


@dataclass(frozen=True)
class ClinicianProgress:
    pseudonym: str
    username: str
    is_active: bool
    assigned: int
    submitted: int
    in_progress: int
    median_seconds: float | None

    @property
    def percent_done(self) -> int:
        return round(100 * self.submitted / self.assigned) if self.assigned else 0


def progress_by_clinician(*, study: RatingStudy) -> list[ClinicianProgress]:
    # Imported raters have no assignments to progress through.
    memberships = (
        StudyMembership.objects.filter(study=study, role=StudyMembership.Role.CLINICIAN)
        .exclude(is_imported=True)
        .select_related("user")
    )
    counts = {
        row["clinician"]: row
        for row in Assignment.objects.filter(study=study)
        .exclude(status=Assignment.Status.WITHDRAWN)
        .values("clinician")
        .annotate(
            assigned=Count("id"),
            submitted=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
            in_progress=Count("id", filter=Q(status=Assignment.Status.IN_PROGRESS)),
        )
    }
    times: dict[int, list[float]] = {}
    for clinician_id, seconds in Assignment.objects.filter(
        study=study, status=Assignment.Status.SUBMITTED
    ).values_list("clinician_id", "time_spent_seconds"):
        times.setdefault(clinician_id, []).append(seconds)
    rows = []
    for m in memberships:
        c = counts.get(m.user_id, {})
        t = times.get(m.user_id)
        rows.append(
            ClinicianProgress(
                pseudonym=m.pseudonym,
                username=m.user.get_username(),
                is_active=m.is_active,
                assigned=c.get("assigned", 0),
                submitted=c.get("submitted", 0),
                in_progress=c.get("in_progress", 0),
                median_seconds=statistics.median(t) if t else None,
            )
        )
    return rows


def median_seconds_per_item(*, study: RatingStudy) -> float | None:
    times = list(
        Assignment.objects.filter(study=study, status=Assignment.Status.SUBMITTED).values_list(
            "time_spent_seconds", flat=True
        )
    )
    return statistics.median(times) if times else None


@dataclass(frozen=True)
class ShortItem:
    item_id: int
    external_id: str
    model_name: str
    submitted: int
    assigned: int


def items_short_of_k(*, study: RatingStudy, limit: int = 200) -> tuple[int, list[ShortItem]]:
    """Items with fewer than k submitted ratings: how many, and the first `limit` of them.
    With a sample drawn, only its items count: the others are never dealt to clinicians."""
    k = study.ratings_per_item
    qs = (
        items_to_rate(study=study)
        .annotate(
            submitted=Count(
                "assignments", filter=Q(assignments__status=Assignment.Status.SUBMITTED)
            ),
            assigned=Count(
                "assignments", filter=~Q(assignments__status=Assignment.Status.WITHDRAWN)
            ),
        )
        .filter(submitted__lt=k)
        .order_by("submitted", "pk")
    )
    total = qs.count()
    rows = [
        ShortItem(
            item_id=i.pk,
            external_id=i.external_id,
            model_name=i.model_name,
            submitted=i.submitted,
            assigned=i.assigned,
        )
        for i in qs[:limit]
    ]
    return total, rows


@dataclass(frozen=True)
class ShortOfK:
    """The dashboard's "items short of k": how many of the items dealt to clinicians lack
    their k ratings, and which. Before any of them has a submitted rating a list says
    nothing (every row reads 0 submitted), so ``awaiting_all`` tells the page to sum it up."""

    total: int  # items short of k
    n_items: int  # items dealt to clinicians (the draw's, or every item)
    ratings_needed: int  # n_items x k
    any_rated: bool  # whether any of them has a submitted rating yet
    rows: list[ShortItem]

    @property
    def awaiting_all(self) -> bool:
        return self.total > 0 and not self.any_rated


def short_of_k(*, study: RatingStudy, limit: int = 50) -> ShortOfK:
    """Items short of k (items_short_of_k) and whether the list is informative yet."""
    total, rows = items_short_of_k(study=study, limit=limit)
    pool = items_to_rate(study=study)
    n_items = pool.count()
    any_rated = Assignment.objects.filter(
        study=study, status=Assignment.Status.SUBMITTED, item__in=pool
    ).exists()
    return ShortOfK(
        total=total,
        n_items=n_items,
        ratings_needed=n_items * study.ratings_per_item,
        any_rated=any_rated,
        rows=rows,
    )


@dataclass(frozen=True)
class FlaggedItem:
    item_id: int
    external_id: str
    model_name: str
    rater: str
    reason: str
    comments: list[str]
    resolved: bool
    resolution: str


def flagged_items(*, study: RatingStudy) -> list[FlaggedItem]:
    """Every flag of the study, open ones first, with the item's model (coordinators and
    researchers see model names) and the rater's comments."""
    labels = clinician_labels(study_id=study.pk)
    flagged = list(
        Assignment.objects.filter(study=study, flagged=True)
        .select_related("item")
        .order_by(F("flag_resolved_at").asc(nulls_first=True), "item_id", "clinician_id")
    )
    comments: dict[int, list[str]] = {}
    for assignment_id, key, comment in (
        Rating.objects.filter(assignment__in=flagged)
        .exclude(comment="")
        .values_list("assignment_id", "criterion__key", "comment")
    ):
        comments.setdefault(assignment_id, []).append(f"{key}: {comment}")
    return [
        FlaggedItem(
            item_id=a.item_id,
            external_id=a.item.external_id,
            model_name=a.item.model_name,
            rater=labels[a.clinician_id],
            reason=a.flag_reason,
            comments=comments.get(a.pk, []),
            resolved=a.flag_resolved_at is not None,
            resolution=a.flag_resolution,
        )
        for a in flagged
    ]


@dataclass(frozen=True)
class WatchSnapshot:
    """The last stored agreement snapshot (agreement.stats.watch.watch_summary) and its state;
    read only: the dashboard never computes it."""

    summary: dict[str, Any] | None
    computed_at: datetime | None
    submissions_seen: int
    updating: bool  # a refresh is queued or running
    error: str
    error_at: datetime | None

    @property
    def rater_names(self) -> list[str]:
        return [r["rater"] for r in (self.summary or {}).get("raters", [])]

    @property
    def drift_rows(self) -> list[dict[str, Any]]:
        """Each batch with its clinicians' leniencies in the order of rater_names."""
        names = self.rater_names
        return [
            {**b, "by_rater": [b["leniency"].get(n) for n in names]}
            for b in (self.summary or {}).get("drift", [])
        ]


def agreement_watch(*, study: RatingStudy) -> WatchSnapshot:
    """One read of the study's agreement watch (empty before the first rating arrives)."""
    row = AgreementWatch.objects.filter(study=study).first()
    if row is None:
        return WatchSnapshot(None, None, 0, False, "", None)
    return WatchSnapshot(
        summary=row.summary,
        computed_at=row.computed_at,
        submissions_seen=row.submissions_seen,
        updating=row.requested_at is not None,
        error=row.error,
        error_at=row.error_at,
    )
