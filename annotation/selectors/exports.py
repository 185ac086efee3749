"""The ratings export: submitted ratings in long format, raters named by pseudonym only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from annotation.models import Assignment, Rating, RatingStudy, StudyMembership

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
