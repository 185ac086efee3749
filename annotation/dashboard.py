"""Reads for coordinators and researchers: progress, gaps, flags and rating exports.

Exports name raters by their study pseudonym only, never by name or e-mail.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from django.db.models import Count, Q

from annotation.models import Assignment, Item, Rating, RatingStudy, StudyMembership

ValueChoice = Literal["latest", "first"]

EXPORT_COLUMNS = [
    "item_id",
    "external_id",
    "model",
    "benchmark",
    "taxonomy_node",
    "criterion",
    "rater",
    "value",
    "cannot_assess",
    "comment",
    "time_spent_seconds",
    "first_submitted_at",
    "latest_submitted_at",
    "revised",
]


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
    memberships = StudyMembership.objects.filter(
        study=study, role=StudyMembership.Role.CLINICIAN
    ).select_related("user")
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
    """Items with fewer than k submitted ratings: how many, and the first `limit` of them."""
    k = study.ratings_per_item
    qs = (
        Item.objects.filter(study=study)
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
class FlaggedItem:
    item_id: int
    external_id: str
    rater: str
    reason: str
    comments: list[str]


def flagged_items(*, study: RatingStudy) -> list[FlaggedItem]:
    pseudonyms = dict(
        StudyMembership.objects.filter(
            study=study, role=StudyMembership.Role.CLINICIAN
        ).values_list("user_id", "pseudonym")
    )
    flagged = list(
        Assignment.objects.filter(study=study, flagged=True)
        .select_related("item")
        .order_by("item_id", "clinician_id")
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
            rater=pseudonyms.get(a.clinician_id, "?"),
            reason=a.flag_reason,
            comments=comments.get(a.pk, []),
        )
        for a in flagged
    ]


def rating_export_rows(
    *, study: RatingStudy, values: ValueChoice = "latest"
) -> Iterator[dict[str, Any]]:
    """Submitted ratings in long format, one row per (item, criterion, rater).

    `values="first"` gives each rating as first submitted; "latest" as it stands now.
    Drafts are not ratings and never appear.
    """
    if values not in ("latest", "first"):
        raise ValueError(f"values must be 'latest' or 'first', got {values!r}")
    pseudonyms = dict(
        StudyMembership.objects.filter(
            study=study, role=StudyMembership.Role.CLINICIAN
        ).values_list("user_id", "pseudonym")
    )
    qs = (
        Rating.objects.filter(
            assignment__study=study, assignment__status=Assignment.Status.SUBMITTED
        )
        .select_related("assignment__item__taxonomy_node", "criterion")
        .order_by("assignment__item_id", "criterion__position", "assignment__clinician_id")
    )
    for r in qs.iterator(chunk_size=2000):
        a = r.assignment
        item = a.item
        first = values == "first"
        yield {
            "item_id": item.pk,
            "external_id": item.external_id,
            "model": item.model_name,
            "benchmark": item.benchmark,
            "taxonomy_node": item.taxonomy_node.name if item.taxonomy_node_id else "",
            "criterion": r.criterion.key,
            "rater": pseudonyms.get(a.clinician_id, ""),
            "value": r.first_value if first else r.value,
            "cannot_assess": r.first_cannot_assess if first else r.cannot_assess,
            "comment": r.comment,
            "time_spent_seconds": round(a.time_spent_seconds, 1),
            "first_submitted_at": r.first_submitted_at.isoformat() if r.first_submitted_at else "",
            "latest_submitted_at": a.submitted_at.isoformat() if a.submitted_at else "",
            "revised": (r.first_value, r.first_cannot_assess) != (r.value, r.cannot_assess),
        }
