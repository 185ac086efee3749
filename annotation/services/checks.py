"""Marking and unmarking attention checks (annotation.checks_models.AttentionCheck), audited.

The expected answer is a range per criterion on that criterion's scale; at least one
criterion must have one. Only an item clinicians are dealt (the draw in force, if any) can
be a check: a check no rater will see would report nothing, silently.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db import transaction

from annotation import audit
from annotation.errors import AnnotationError
from annotation.models import (
    AttentionCheck,
    CalibrationItem,
    Item,
    RatingStudy,
    StudyMembership,
    items_to_rate,
)
from annotation.selectors.studies import roles_in_study
from annotation.services.membership import acting_roles
from medhelm_site.common.text_limits import checked_column_text

MARK_ACTION = "attention_check.mark"
UNMARK_ACTION = "attention_check.unmark"


def check_coordinator(*, study: RatingStudy, actor: AbstractBaseUser) -> None:
    """Only a coordinator of the study acting as one (a rater of the study never is)."""
    roles = acting_roles(roles_in_study(user=actor, study=study))
    if StudyMembership.Role.COORDINATOR not in roles:
        raise PermissionDenied("only a coordinator of this study may mark attention checks")


def _checked_expected(
    study: RatingStudy, expected: Mapping[str, tuple[int | None, int | None]]
) -> dict[str, list[int]]:
    """{key: [low, high]} for every criterion given a bound (a lone bound is the other
    end of the scale); errors name the criterion."""
    scales = {c.key: (c.scale_min, c.scale_max) for c in study.criteria.all()}
    out: dict[str, list[int]] = {}
    for key, (low, high) in expected.items():
        if key not in scales:
            raise AnnotationError(f"the study has no criterion {key!r}", field=key)
        if low is None and high is None:
            continue
        lo, hi = scales[key]
        low = lo if low is None else low
        high = hi if high is None else high
        if not lo <= low <= high <= hi:
            raise AnnotationError(
                f"the expected range must be ordered and within the scale {lo}-{hi}, "
                f"got {low}-{high}",
                field=key,
            )
        out[key] = [low, high]
    if not out:
        raise AnnotationError(
            "give the expected answer (a range) for at least one criterion", field="expected"
        )
    return out


@transaction.atomic
def mark_attention_check(
    *,
    study: RatingStudy,
    item_id: int,
    expected: Mapping[str, tuple[int | None, int | None]],
    note: str,
    actor: AbstractBaseUser,
) -> AttentionCheck:
    """Make the study's item an attention check, or change the expected answer of one."""
    check_coordinator(study=study, actor=actor)
    item = Item.objects.filter(study=study, pk=item_id).first()
    if item is None:
        raise AnnotationError(f"no item {item_id} in this study", field="item")
    if CalibrationItem.objects.filter(item=item).exists():
        raise AnnotationError(
            f"item {item_id} is a calibration item: unmark it on the calibration page first",
            field="item",
        )
    if not items_to_rate(study).filter(pk=item.pk).exists():
        raise AnnotationError(
            f"item {item_id} is outside the sample drawn for clinicians: no rater would see it",
            field="item",
        )
    note = checked_column_text(
        note, model=AttentionCheck, column="note", error=AnnotationError, field="note"
    ).strip()
    ranges = _checked_expected(study, expected)
    check = AttentionCheck.objects.select_for_update().filter(item=item).first()
    before = None if check is None else {"expected": check.expected, "note": check.note}
    if check is None:
        check = AttentionCheck(study=study, item=item, created_by=actor)
    check.expected, check.note = ranges, note
    check.save()
    audit.record(
        actor=actor,
        action=MARK_ACTION,
        target=check,
        study=study,
        before=before,
        after={"item": item.pk, "expected": ranges, "note": note},
    )
    return check


@transaction.atomic
def unmark_attention_check(*, study: RatingStudy, item_id: int, actor: AbstractBaseUser) -> None:
    """The item is an ordinary item again (its ratings return to the statistics)."""
    check_coordinator(study=study, actor=actor)
    check = AttentionCheck.objects.select_for_update().filter(study=study, item_id=item_id).first()
    if check is None:
        raise AnnotationError(f"item {item_id} is not an attention check", field="item")
    audit.record(
        actor=actor,
        action=UNMARK_ACTION,
        target=check,
        study=study,
        before={"item": item_id, "expected": check.expected, "note": check.note},
    )
    check.delete()
