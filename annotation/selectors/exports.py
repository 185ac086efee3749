"""The ratings export: submitted ratings in long format, raters named by pseudonym only.

Each row says whether its item is an attention check (annotation.checks_models) and, for
the row's criterion, the range that passes, so a researcher can leave the checks out or
score them. Only study readers (coordinators, researchers) get this export; raters never
do, so planted checks stay hidden from them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from annotation.models import (
    Assignment,
    AttentionCheck,
    CalibrationItem,
    ImportedRating,
    Rating,
    RatingStudy,
)
from annotation.selectors.raters import clinician_labels

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
    # planted attention checks: whether the item is one, and the range of this criterion
    # that passes (empty where the check does not name the criterion)
    "attention_check",
    "expected_low",
    "expected_high",
]


def rating_export_rows(
    *, study: RatingStudy, values: ValueChoice = "latest"
) -> Iterator[dict[str, Any]]:
    """Submitted ratings in long format, one row per (item, criterion, rater).

    `values="first"` gives each rating as first submitted; "latest" as it stands now.
    Drafts are not ratings and never appear. Attention-check items are marked, with the
    expected range of the row's criterion (see the module docstring).
    """
    if values not in ("latest", "first"):
        raise ValueError(f"values must be 'latest' or 'first', got {values!r}")
    checks: dict[int, dict[str, list[int]]] = dict(
        AttentionCheck.objects.filter(study=study).values_list("item_id", "expected")
    )
    labels = clinician_labels(study_id=study.pk)
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
        expected = checks.get(item.pk)
        low, high = (expected or {}).get(r.criterion.key) or (None, None)
        yield {
            "item_id": item.pk,
            "external_id": item.external_id,
            "model": item.model_name,
            "benchmark": item.benchmark,
            "taxonomy_node": item.taxonomy_node.name if item.taxonomy_node_id else "",
            "criterion": r.criterion.key,
            "rater": labels[a.clinician_id],
            "value": r.first_value if first else r.value,
            "cannot_assess": r.first_cannot_assess if first else r.cannot_assess,
            "comment": r.comment,
            "time_spent_seconds": round(a.time_spent_seconds, 1),
            "first_submitted_at": r.first_submitted_at.isoformat() if r.first_submitted_at else "",
            "latest_submitted_at": a.submitted_at.isoformat() if a.submitted_at else "",
            "revised": (r.first_value, r.first_cannot_assess) != (r.value, r.cannot_assess),
            "attention_check": expected is not None,
            "expected_low": low,
            "expected_high": high,
        }


#: The long format of the ratings import (annotation.services.rating_imports): an export in
#: it imports into another study with the same items (and the same marks) unchanged. The
#: last five columns mark the ratings the score table leaves out (annotation.imports.
#: longmarks): attention checks with the range of the row's criterion that passes, and
#: calibration items with the reference value of the row's criterion.
LONG_RATING_COLUMNS = [
    "external_id",
    "model",
    "rater",
    "criterion",
    "value",
    "comment",
    "attention_check",
    "expected_low",
    "expected_high",
    "calibration_item",
    "calibration_reference",
]


def _marks(
    item_id: int,
    key: str,
    checks: dict[int, dict[str, list[int]]],
    references: dict[int, dict[str, int]],
) -> dict[str, Any]:
    """The marking columns of one (item, criterion): empty ranges and references where the
    check or the calibration item does not name the criterion."""
    low, high = (checks.get(item_id) or {}).get(key) or (None, None)
    return {
        "attention_check": item_id in checks,
        "expected_low": low,
        "expected_high": high,
        "calibration_item": item_id in references,
        "calibration_reference": (references.get(item_id) or {}).get(key),
    }


def ratings_long_rows(*, study: RatingStudy) -> list[dict[str, Any]]:
    """Every rating with a value, in the import's long format: submitted ratings as they
    stand (cannot-assess answers are not scores) and imported ones, raters by pseudonym,
    sorted by item, criterion and rater; each marked when its item is an attention check or
    a calibration item (which the score table leaves out). Five queries."""
    labels = clinician_labels(study_id=study.pk)
    checks: dict[int, dict[str, list[int]]] = dict(
        AttentionCheck.objects.filter(study=study).values_list("item_id", "expected")
    )
    references: dict[int, dict[str, int]] = dict(
        CalibrationItem.objects.filter(study=study).values_list("item_id", "reference")
    )
    rows: list[tuple[tuple, dict[str, Any]]] = []
    native = Rating.objects.filter(
        assignment__study=study,
        assignment__status=Assignment.Status.SUBMITTED,
        cannot_assess=False,
        value__isnull=False,
    ).values_list(
        "assignment__item_id",
        "assignment__item__external_id",
        "assignment__item__model_name",
        "assignment__clinician_id",
        "criterion__position",
        "criterion__key",
        "value",
        "comment",
    )
    for item_id, ext, model, user_id, position, key, value, comment in native:
        rater = labels[user_id]
        row = {"external_id": ext, "model": model, "rater": rater, "criterion": key}
        row |= {"value": value, "comment": comment, **_marks(item_id, key, checks, references)}
        rows.append(((item_id, position, key, rater), row))
    imported = ImportedRating.objects.filter(study=study).values_list(
        "item_id",
        "item__external_id",
        "item__model_name",
        "rater__pseudonym",
        "criterion__position",
        "criterion__key",
        "value",
        "comment",
    )
    for item_id, ext, model, rater, position, key, value, comment in imported:
        shown = int(value) if float(value).is_integer() else value
        row = {"external_id": ext, "model": model, "rater": rater, "criterion": key}
        row |= {"value": shown, "comment": comment, **_marks(item_id, key, checks, references)}
        rows.append(((item_id, position, key, rater), row))
    rows.sort(key=lambda pair: pair[0])
    return [row for _key, row in rows]
