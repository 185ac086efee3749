"""Reads for calibration items: which items are calibration items, a rater's own comparison
with the reference (only once they have rated every calibration item dealt to them), and
each rater's calibration agreement for coordinators, researchers and the report.

Calibration compares the values as first submitted (Rating.first_value): a rater may
revise a calibration rating after seeing the reference, and that must not improve their
result.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from annotation.calibration_stats import (
    MIN_KAPPA_PAIRS,
    CalibrationAgreement,
    CalibrationPair,
    calibration_agreement,
)
from annotation.models import (
    Assignment,
    CalibrationCompletion,
    CalibrationItem,
    Item,
    Rating,
    RatingStudy,
    RubricCriterion,
)
from annotation.selectors.item_choices import ItemChoices, item_choices
from annotation.selectors.next_assignment import first_open_handle
from annotation.selectors.raters import clinician_labels


def calibration_items(*, study: RatingStudy) -> list[CalibrationItem]:
    return list(CalibrationItem.objects.filter(study=study).select_related("item", "set_by"))


def calibration_item_ids(*, study: RatingStudy) -> set[int]:
    return set(CalibrationItem.objects.filter(study=study).values_list("item_id", flat=True))


def _calibration_assignments(study: RatingStudy, clinician_id: int | None = None):
    rows = Assignment.objects.filter(study=study, item__calibration_item__isnull=False).exclude(
        status=Assignment.Status.WITHDRAWN
    )
    return rows if clinician_id is None else rows.filter(clinician_id=clinician_id)


def next_calibration_handle(*, study: RatingStudy, user: AbstractBaseUser) -> str | None:
    """The rater's next unfinished calibration item, else None: where they start among
    their calibration items (next_assignment: a started draft first, then their own order),
    as the resume redirect would send them, in one query."""
    return first_open_handle(study_id=study.pk, clinician_id=user.pk, calibration_only=True)


@dataclass(frozen=True)
class CriterionComparison:
    label: str
    key: str
    yours: int | None  # None: you answered "cannot assess"
    reference: int

    @property
    def difference(self) -> int | None:
        return None if self.yours is None else self.yours - self.reference


@dataclass(frozen=True)
class ItemComparison:
    handle: str
    input_text: str
    criteria: list[CriterionComparison]


@dataclass
class RaterCalibration:
    """A rater's calibration as they may see it: the comparison only when ``complete``."""

    total: int
    submitted: int
    next_handle: str | None
    items: list[ItemComparison] = field(default_factory=list)
    agreement: CalibrationAgreement | None = None

    @property
    def complete(self) -> bool:
        return self.total > 0 and self.submitted == self.total


def _scales(study: RatingStudy) -> dict[str, RubricCriterion]:
    return {c.key: c for c in RubricCriterion.objects.filter(study=study)}


def _first_answers(assignment_ids: list[int]) -> dict[int, dict[str, int | None]]:
    """assignment -> criterion key -> value as first submitted (None: cannot assess)."""
    out: dict[int, dict[str, int | None]] = defaultdict(dict)
    for assignment_id, key, first_value in Rating.objects.filter(
        assignment_id__in=assignment_ids, first_submitted_at__isnull=False
    ).values_list("assignment_id", "criterion__key", "first_value"):
        out[assignment_id][key] = first_value
    return out


def _pairs(
    reference: dict[str, int], answers: dict[str, int | None], scales: dict[str, RubricCriterion]
) -> list[tuple[str, CalibrationPair]]:
    """(criterion key, pair) for each referenced criterion the rater gave a value."""
    return [
        (key, CalibrationPair(answers[key], ref, scales[key].scale_min, scales[key].scale_max))
        for key, ref in reference.items()
        if key in scales and answers.get(key) is not None
    ]


def rater_calibration(*, study: RatingStudy, user: AbstractBaseUser) -> RaterCalibration:
    """The rater's calibration progress; once every calibration item dealt to them is
    submitted, their first answers beside the reference and the agreement. Before that it
    carries no reference value."""
    assignments = list(
        _calibration_assignments(study, user.pk)
        .select_related("item__calibration_item")
        .order_by("position")
    )
    submitted = [a for a in assignments if a.status == Assignment.Status.SUBMITTED]
    state = RaterCalibration(
        total=len(assignments),
        submitted=len(submitted),
        next_handle=next_calibration_handle(study=study, user=user)
        if len(submitted) < len(assignments)
        else None,
    )
    if not state.complete:
        return state
    scales = _scales(study)
    answers = _first_answers([a.pk for a in submitted])
    pairs: list[tuple[str, CalibrationPair]] = []
    for a in submitted:
        reference = a.item.calibration_item.reference
        mine = answers.get(a.pk, {})
        state.items.append(
            ItemComparison(
                handle=a.handle,
                input_text=a.item.input_text,
                criteria=[
                    CriterionComparison(scales[k].label, k, mine.get(k), v)
                    for k, v in reference.items()
                    if k in scales
                ],
            )
        )
        pairs += _pairs(reference, mine, scales)
    state.agreement = calibration_agreement([p for _key, p in pairs])
    return state


@dataclass
class RaterCalibrationResult:
    rater: str  # pseudonym
    dealt: int
    submitted: int
    completed_at: datetime | None
    overall: CalibrationAgreement
    by_criterion: dict[str, CalibrationAgreement]
    cannot_assess: int  # referenced criteria answered "cannot assess"


def calibration_results(*, study: RatingStudy) -> list[RaterCalibrationResult]:
    """Per rater dealt any calibration item, by pseudonym: progress, when they completed it,
    and their agreement with the reference (first values) overall and per criterion."""
    references = dict(
        CalibrationItem.objects.filter(study=study).values_list("item_id", "reference")
    )
    if not references:
        return []
    labels = clinician_labels(study_id=study.pk)
    completed = dict(
        CalibrationCompletion.objects.filter(study=study).values_list(
            "clinician_id", "completed_at"
        )
    )
    rows = list(
        _calibration_assignments(study).values_list("pk", "item_id", "clinician_id", "status")
    )
    answers = _first_answers(
        [pk for pk, _i, _c, status in rows if status == Assignment.Status.SUBMITTED]
    )
    scales = _scales(study)
    per_rater: dict[int, dict[str, Any]] = {}
    for pk, item_id, clinician_id, status in rows:
        r = per_rater.setdefault(
            clinician_id, {"dealt": 0, "submitted": 0, "pairs": [], "cannot_assess": 0}
        )
        r["dealt"] += 1
        if status != Assignment.Status.SUBMITTED:
            continue
        r["submitted"] += 1
        mine = answers.get(pk, {})
        r["pairs"] += _pairs(references[item_id], mine, scales)
        r["cannot_assess"] += sum(
            1 for key in references[item_id] if key in mine and mine[key] is None
        )
    out = []
    for clinician_id, r in per_rater.items():
        by_key: dict[str, list[CalibrationPair]] = defaultdict(list)
        for key, pair in r["pairs"]:
            by_key[key].append(pair)
        out.append(
            RaterCalibrationResult(
                rater=labels[clinician_id],
                dealt=r["dealt"],
                submitted=r["submitted"],
                completed_at=completed.get(clinician_id),
                overall=calibration_agreement([p for _key, p in r["pairs"]]),
                by_criterion={
                    key: calibration_agreement(by_key[key]) for key in scales if key in by_key
                },
                cannot_assess=r["cannot_assess"],
            )
        )
    return sorted(out, key=lambda x: x.rater)


def calibration_record(*, study: RatingStudy) -> dict[str, Any]:
    """What the report's method section states about calibration: how many calibration
    items (left out of every statistic), the rule, and each rater's agreement overall."""
    results = calibration_results(study=study)
    return {
        "n_items": CalibrationItem.objects.filter(study=study).count(),
        "values": "first submitted",
        "kappa": f"quadratic-weighted Cohen's kappa, given from {MIN_KAPPA_PAIRS} pairs on one scale",
        "raters": [
            {
                "rater": r.rater,
                "dealt": r.dealt,
                "submitted": r.submitted,
                "completed": r.completed_at is not None,
                **r.overall.as_dict(),
            }
            for r in results
        ],
    }


def calibration_item_choices(
    *, study: RatingStudy, query: str = "", include: int | None = None
) -> ItemChoices:
    """Calibration items and items nobody has started rating as ordinary work (the others
    the service refuses), minus attention checks, as the calibration page's item list
    (selectors.item_choices: search, `include`)."""
    started = Assignment.objects.filter(
        study=study,
        item__calibration_item__isnull=True,
        status__in=[Assignment.Status.IN_PROGRESS, Assignment.Status.SUBMITTED],
    ).values("item_id")
    items = Item.objects.filter(study=study, attention_check__isnull=True).exclude(pk__in=started)
    marked = dict.fromkeys(calibration_item_ids(study=study), "calibration item")
    return item_choices(study=study, items=items, query=query, include=include, marked=marked)
