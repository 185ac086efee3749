"""The marks a ratings long file may carry beside each rating, as the long export writes them
(annotation.selectors.exports.LONG_RATING_COLUMNS): whether the item is an attention check,
with the range of the row's criterion that passes, and whether it is a calibration item,
with the reference value of the row's criterion.

The ratings import accepts them and checks them against the study's own marks. The score
table leaves attention checks and calibration items out by the study's marks, not the
file's: a rating the file marks on an item the study does not (or the other way round)
would enter, or leave, the agreement statistics unseen, so such a line is refused, naming
the item's mark and what to do. A blank cell states nothing and is not checked, so files
without these columns import as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotation.imports.longfile import LineError, LongRecord, parse_number
from annotation.models import AttentionCheck, CalibrationItem, RatingStudy

MARK_COLUMNS = (
    "attention_check",
    "expected_low",
    "expected_high",
    "calibration_item",
    "calibration_reference",
)
TRUE = ("true", "yes", "1")
FALSE = ("false", "no", "0")


def _flag(record: LongRecord, column: str, errors: list[LineError]) -> bool | None:
    """The cell as a yes or no; None when blank."""
    text = record.cells[column].strip().lower()
    if not text:
        return None
    if text in TRUE or text in FALSE:
        return text in TRUE
    reason = f"{record.cells[column].strip()!r} is neither true nor false (blank: not stated)"
    errors.append(LineError(record.line, column, reason))
    return None


#: A mark column: what it marks, and the page where a study marks it.
_MARKED = {
    "attention_check": ("an attention check", "Attention checks"),
    "calibration_item": ("a calibration item", "Calibration"),
}


def _flag_agrees(
    record: LongRecord, column: str, study_marks: bool, errors: list[LineError]
) -> None:
    """A stated mark (yes or no) must be the study's; a blank cell states nothing."""
    flag = _flag(record, column, errors)
    what, page = _MARKED[column]
    if flag is True and not study_marks:
        reason = (
            f"the file marks this item as {what}, but this study does not: mark it on the "
            f"{page} page first (its ratings would otherwise count in the agreement "
            "statistics), or leave the cell blank"
        )
        errors.append(LineError(record.line, column, reason))
    elif flag is False and study_marks:
        reason = (
            f"this item is {what} in this study, but the file says it is not one (its "
            "ratings stay out of the agreement statistics)"
        )
        errors.append(LineError(record.line, column, reason))


def _whole(record: LongRecord, column: str, errors: list[LineError]) -> int | None:
    """The cell as a whole number; None when blank."""
    text = record.cells[column].strip()
    if not text:
        return None
    value = parse_number(text)
    if value is None or not value.is_integer():
        errors.append(LineError(record.line, column, f"{text!r} is not a whole scale point"))
        return None
    return int(value)


@dataclass
class StudyMarks:
    """A study's attention checks ({item: {criterion key: [low, high]}}) and calibration
    items ({item: {criterion key: reference}}). Two queries."""

    checks: dict[int, dict[str, list[int]]]
    references: dict[int, dict[str, int]]

    @classmethod
    def of(cls, study: RatingStudy) -> StudyMarks:
        return cls(
            checks=dict(
                AttentionCheck.objects.filter(study=study).values_list("item_id", "expected")
            ),
            references=dict(
                CalibrationItem.objects.filter(study=study).values_list("item_id", "reference")
            ),
        )

    def check(self, record: LongRecord, item_id: int, key: str, errors: list[LineError]) -> None:
        """Every mark the line states must be the study's; problems go to `errors`."""
        self._attention(record, item_id, key, errors)
        self._calibration(record, item_id, key, errors)

    def _attention(
        self, record: LongRecord, item_id: int, key: str, errors: list[LineError]
    ) -> None:
        _flag_agrees(record, "attention_check", item_id in self.checks, errors)
        low = _whole(record, "expected_low", errors)
        high = _whole(record, "expected_high", errors)
        if low is None and high is None:
            return
        wanted = (self.checks.get(item_id) or {}).get(key)
        if wanted is None:
            reason = (
                f"an expected range is given, but this study's attention checks name none "
                f"for {key} of this item"
            )
            errors.append(LineError(record.line, "expected_low", reason))
        elif [low, high] != list(wanted):
            reason = (
                f"the expected range {_range(low, high)} differs from this study's attention "
                f"check ({_range(*wanted)})"
            )
            errors.append(LineError(record.line, "expected_low", reason))

    def _calibration(
        self, record: LongRecord, item_id: int, key: str, errors: list[LineError]
    ) -> None:
        _flag_agrees(record, "calibration_item", item_id in self.references, errors)
        reference = _whole(record, "calibration_reference", errors)
        if reference is None:
            return
        wanted = (self.references.get(item_id) or {}).get(key)
        if wanted != reference:
            study_has = (
                f"this study's reference is {wanted}"
                if wanted is not None
                else "this study gives none for it"
            )
            reason = f"the calibration reference {reference} for {key} differs: {study_has}"
            errors.append(LineError(record.line, "calibration_reference", reason))


def _range(low: int | None, high: int | None) -> str:
    return "-".join("(blank)" if v is None else str(v) for v in (low, high))
