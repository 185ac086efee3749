"""Checks of long-file lines against a study: which item, which criterion, which value.

Shared by the ratings import (annotation.services.rating_imports) and the machine scores
import (jury.score_imports), so that both name an unknown item or a value off the scale in
the same words.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotation.imports.longfile import LineError, LongRecord, parse_number
from annotation.imports.rows import suggest
from annotation.models import Item, RatingStudy, RubricCriterion

ITEM_ALIASES = {
    "id": "external_id",
    "item": "external_id",
    "item_external_id": "external_id",
    "model_name": "model",
}


@dataclass
class StudyIndex:
    """A study's items by (external id, model) and criteria by key. Two queries."""

    items: dict[tuple[str, str], int]
    criteria: dict[str, RubricCriterion]
    models: dict[str, list[str]]  # external id -> its models, for the hint of a wrong model

    @classmethod
    def of(cls, study: RatingStudy) -> StudyIndex:
        items = {
            (ext, model): pk
            for pk, ext, model in Item.objects.filter(study=study).values_list(
                "pk", "external_id", "model_name"
            )
        }
        criteria = {c.key: c for c in study.criteria.order_by("position", "pk")}
        models: dict[str, list[str]] = {}
        for ext, model in sorted(items):
            models.setdefault(ext, []).append(model)
        return cls(items=items, criteria=criteria, models=models)

    def item(self, record: LongRecord, errors: list[LineError]) -> int | None:
        ext, model = record.cells["external_id"].strip(), record.cells["model"].strip()
        item_id = self.items.get((ext, model))
        if item_id is None:
            models = self.models.get(ext, [])  # not a scan of every item per bad line
            hint = (
                f"; this study has it with model {', '.join(repr(m) for m in models)}"
                if models
                else "; import the items first (Import items)"
            )
            reason = f"no item {ext!r} with model {model!r} in this study{hint}"
            errors.append(LineError(record.line, "external_id", reason))
        return item_id

    def criterion(self, record: LongRecord, errors: list[LineError]) -> RubricCriterion | None:
        key = record.cells["criterion"].strip()
        criterion = self.criteria.get(key)
        if criterion is None:
            known = ", ".join(self.criteria)
            reason = (
                f"unknown criterion {key!r}{suggest(key, self.criteria)}; the rubric has {known}"
            )
            errors.append(LineError(record.line, "criterion", reason))
        return criterion


def scale_value(
    record: LongRecord,
    criterion: RubricCriterion | None,
    errors: list[LineError],
    *,
    decimals: bool | None = None,
) -> float | None:
    """The line's value if it is a number on the criterion's scale; whole unless `decimals`
    (default: the criterion's allows_decimals). Without a criterion only the number is
    checked."""
    text = record.cells["value"].strip()
    value = parse_number(text)
    if value is None:
        errors.append(LineError(record.line, "value", f"{text!r} is not a number"))
        return None
    if criterion is None:
        return value
    lo, hi = criterion.scale_min, criterion.scale_max
    if not lo <= value <= hi:
        reason = f"{text} is outside the scale of {criterion.key} ({lo} to {hi})"
        errors.append(LineError(record.line, "value", reason))
        return None
    allowed = criterion.allows_decimals if decimals is None else decimals
    if not allowed and not value.is_integer():
        reason = (
            f"{text} is not a whole point of {criterion.key}'s scale; a coordinator may allow "
            "decimals for this criterion in the study settings"
        )
        errors.append(LineError(record.line, "value", reason))
        return None
    return value


def text_cell(
    record: LongRecord, column: str, errors: list[LineError], *, max_length: int
) -> str | None:
    """The cell without surrounding whitespace, if it fits `max_length` and has no NUL."""
    text = record.cells[column].strip()
    if len(text) > max_length:
        reason = f"is {len(text)} characters long; at most {max_length}"
        errors.append(LineError(record.line, column, reason))
        return None
    if "\x00" in text:
        errors.append(LineError(record.line, column, "contains a NUL character"))
        return None
    return text
