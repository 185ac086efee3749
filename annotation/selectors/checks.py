"""Reads for attention checks: which items are checks, and how each rater did on them.

For coordinators and researchers only (the dashboard, the checks page, the export); nothing a
rater reads calls these.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from annotation.models import (
    Assignment,
    AttentionCheck,
    Rating,
    RatingStudy,
    items_to_rate,
)
from annotation.selectors.item_choices import ItemChoices, item_choices
from annotation.selectors.raters import clinician_labels

PASSED, FAILED, NOT_RATED = "passed", "failed", "not yet rated"
CHECK_EXPORT_COLUMNS = (
    "rater",
    "item",
    "external_id",
    "model",
    "status",
    "criterion",
    "expected_low",
    "expected_high",
    "answer",
    "within",
)


def check_outcome(
    expected: Mapping[str, list[int]], answers: Mapping[str, int | None] | None
) -> str:
    """PASSED when every expected criterion's answer lies in its range; FAILED otherwise (a
    cannot-assess or missing answer fails: the answer was meant to be obvious); NOT_RATED
    without submitted answers."""
    if answers is None:
        return NOT_RATED
    for key, (low, high) in expected.items():
        value = answers.get(key)
        if value is None or not low <= value <= high:
            return FAILED
    return PASSED


@dataclass(frozen=True)
class CheckAnswer:
    rater: str
    check: AttentionCheck
    status: str
    answers: dict[str, int | None]  # criterion key -> submitted value (None: cannot assess)


@dataclass
class RaterChecks:
    rater: str
    counts: Counter[str] = field(default_factory=Counter)
    answers: list[CheckAnswer] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return self.counts[PASSED]

    @property
    def failed(self) -> int:
        return self.counts[FAILED]

    @property
    def not_rated(self) -> int:
        return self.counts[NOT_RATED]


def attention_checks(*, study: RatingStudy) -> list[AttentionCheck]:
    return list(AttentionCheck.objects.filter(study=study).select_related("item"))


def check_results(*, study: RatingStudy) -> list[RaterChecks]:
    """Per rater dealt any check (by pseudonym, in pseudonym order): passed, failed and not
    yet rated, with the answers given. Three queries."""
    checks = {c.item_id: c for c in attention_checks(study=study)}
    if not checks:
        return []
    labels = clinician_labels(study_id=study.pk)
    assignments = list(
        Assignment.objects.filter(study=study, item_id__in=checks)
        .exclude(status=Assignment.Status.WITHDRAWN)
        .values_list("pk", "item_id", "clinician_id", "status")
    )
    submitted = {pk for pk, _i, _c, status in assignments if status == Assignment.Status.SUBMITTED}
    given: dict[int, dict[str, int | None]] = {pk: {} for pk in submitted}
    for assignment_id, key, value in Rating.objects.filter(assignment_id__in=submitted).values_list(
        "assignment_id", "criterion__key", "value"
    ):
        given[assignment_id][key] = value
    by_rater: dict[str, RaterChecks] = {}
    for pk, item_id, clinician_id, _status in assignments:
        rater = labels[clinician_id]
        check = checks[item_id]
        answers = given.get(pk)
        status = check_outcome(check.expected, answers)
        row = by_rater.setdefault(rater, RaterChecks(rater=rater))
        row.counts[status] += 1
        row.answers.append(CheckAnswer(rater, check, status, answers or {}))
    for row in by_rater.values():
        row.answers.sort(key=lambda a: (a.check.item.external_id, a.check.item_id))
    return [by_rater[name] for name in sorted(by_rater)]


def check_export_rows(*, study: RatingStudy) -> Iterator[list[object]]:
    """One row per rater, check and expected criterion (CHECK_EXPORT_COLUMNS)."""
    for rater in check_results(study=study):
        for a in rater.answers:
            item = a.check.item
            for key, (low, high) in a.check.expected.items():
                value = a.answers.get(key)
                rated = a.status != NOT_RATED
                yield [
                    rater.rater,
                    item.pk,
                    item.external_id,
                    item.model_name,
                    a.status,
                    key,
                    low,
                    high,
                    ("cannot assess" if value is None else value) if rated else "",
                    ("yes" if value is not None and low <= value <= high else "no")
                    if rated
                    else "",
                ]


def attention_check_item_ids(*, study: RatingStudy) -> set[int]:
    return set(AttentionCheck.objects.filter(study=study).values_list("item_id", flat=True))


def check_item_choices(
    *, study: RatingStudy, query: str = "", include: int | None = None
) -> ItemChoices:
    """The items clinicians are dealt (the draw's, never a calibration item: the others the
    service refuses), attention checks among them said so, as the attention-checks page's
    item list (selectors.item_choices: search, `include`)."""
    marked = dict.fromkeys(attention_check_item_ids(study=study), "attention check")
    return item_choices(
        study=study, items=items_to_rate(study), query=query, include=include, marked=marked
    )
