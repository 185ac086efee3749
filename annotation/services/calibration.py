"""Calibration items (annotation.calibration_models): marking an item with a reference
rating, dealing calibration items to every active clinician, and recording when a rater
finished calibration. Audited.

A calibration item is an item of the study taken out of the balanced design's pool
(models.items_to_rate) and out of every agreement statistic. Only an item nobody has
started rating as ordinary work can be marked (its ratings would otherwise vanish from the
statistics); its unstarted ordinary assignments are withdrawn. Unmarking withdraws its
calibration assignments (their ratings stay as history) and returns it to the pool.
A rater who has completed calibration is not dealt calibration items marked later.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from annotation import audit
from annotation.errors import AnnotationError
from annotation.locking import refuse_if_locked
from annotation.models import (
    Assignment,
    AttentionCheck,
    CalibrationCompletion,
    CalibrationItem,
    Item,
    RatingStudy,
    StudyMembership,
)
from annotation.selectors.calibration import next_calibration_handle, rater_calibration
from annotation.selectors.studies import roles_in_study
from annotation.services.assignment import deal_calibration
from annotation.services.membership import acting_roles
from medhelm_site.common.text_limits import checked_column_text

MARK_ACTION = "calibration_item.mark"
UNMARK_ACTION = "calibration_item.unmark"
COMPLETE_ACTION = "calibration.complete"


def _check_coordinator(*, study: RatingStudy, actor: AbstractBaseUser) -> None:
    roles = acting_roles(roles_in_study(user=actor, study=study))
    if StudyMembership.Role.COORDINATOR not in roles:
        raise PermissionDenied("only a coordinator of this study may set calibration items")


def checked_reference(study: RatingStudy, reference: Mapping[str, int | None]) -> dict[str, int]:
    """{key: value} for every criterion given a reference (a whole point on its scale);
    errors name the criterion and the value."""
    criteria = {c.key: c for c in study.criteria.all()}
    out: dict[str, int] = {}
    for key, value in reference.items():
        criterion = criteria.get(key)
        if criterion is None:
            raise AnnotationError(f"the study has no criterion {key!r}", field=key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise AnnotationError(
                f"{criterion.label}: the reference must be a whole scale point, got {value!r}",
                field=key,
            )
        if not criterion.scale_min <= value <= criterion.scale_max:
            raise AnnotationError(
                f"{criterion.label}: the reference {value} lies outside the scale "
                f"{criterion.scale_min}-{criterion.scale_max}",
                field=key,
            )
        out[key] = value
    if not out:
        raise AnnotationError(
            "give the reference value for at least one criterion", field="reference"
        )
    return out


def _refuse_unless_fresh(study: RatingStudy, item: Item) -> None:
    refuse_if_locked(study=study, error=AnnotationError, what="calibration items")
    if AttentionCheck.objects.filter(item=item).exists():
        raise AnnotationError(
            f"item {item.pk} is an attention check: unmark it there first", field="item"
        )
    # (withdrawn work is no part of the statistics: an unmarked calibration item's, or a
    # departed rater's draft)
    started = Assignment.objects.filter(
        item=item, status__in=[Assignment.Status.IN_PROGRESS, Assignment.Status.SUBMITTED]
    )
    n = started.values("clinician_id").distinct().count()
    if n:
        raise AnnotationError(
            f"item {item.pk} is already being rated as an ordinary item by {n} rater"
            f"{'s' if n > 1 else ''}: import a copy of it to use for calibration",
            field="item",
        )


@transaction.atomic
def mark_calibration_item(
    *,
    study: RatingStudy,
    item_id: int,
    reference: Mapping[str, int | None],
    note: str,
    actor: AbstractBaseUser,
) -> CalibrationItem:
    """Make the study's item a calibration item with this reference, or change the
    reference of one; a new calibration item is dealt to the raters at once."""
    _check_coordinator(study=study, actor=actor)
    study = RatingStudy.objects.select_for_update().get(pk=study.pk)
    item = Item.objects.filter(study=study, pk=item_id).first()
    if item is None:
        raise AnnotationError(f"no item {item_id} in this study", field="item")
    note = checked_column_text(
        note, model=CalibrationItem, column="note", error=AnnotationError, field="note"
    ).strip()
    values = checked_reference(study, reference)
    calibration = CalibrationItem.objects.select_for_update().filter(item=item).first()
    before = None
    if calibration is None:
        _refuse_unless_fresh(study, item)
        # its unstarted ordinary work goes: from now on it is dealt to every rater apart
        Assignment.objects.filter(item=item, status=Assignment.Status.PENDING).delete()
        calibration = CalibrationItem(study=study, item=item)
    else:
        before = {"reference": calibration.reference, "note": calibration.note}
    calibration.reference, calibration.note = values, note
    calibration.set_by, calibration.set_at = actor, timezone.now()
    calibration.save()
    dealt = deal_calibration(study=study) if before is None else 0
    audit.record(
        actor=actor,
        action=MARK_ACTION,
        target=calibration,
        study=study,
        before=before,
        after={"item": item.pk, "reference": values, "note": note, "dealt": dealt},
    )
    return calibration


@transaction.atomic
def unmark_calibration_item(*, study: RatingStudy, item_id: int, actor: AbstractBaseUser) -> None:
    """The item is an ordinary item again, for the next balance; its calibration work is
    withdrawn (unstarted work deleted), so it counts in no rater's calibration."""
    _check_coordinator(study=study, actor=actor)
    calibration = (
        CalibrationItem.objects.select_for_update().filter(study=study, item_id=item_id).first()
    )
    if calibration is None:
        raise AnnotationError(f"item {item_id} is not a calibration item", field="item")
    refuse_if_locked(study=study, error=AnnotationError, what="calibration items")
    Assignment.objects.filter(item_id=item_id, status=Assignment.Status.PENDING).delete()
    withdrawn = Assignment.objects.filter(item_id=item_id).update(
        status=Assignment.Status.WITHDRAWN
    )
    audit.record(
        actor=actor,
        action=UNMARK_ACTION,
        target=calibration,
        study=study,
        before={"item": item_id, "reference": calibration.reference, "note": calibration.note},
        after={"withdrawn": withdrawn},
    )
    calibration.delete()


@transaction.atomic
def advance_calibration(*, study: RatingStudy, clinician: AbstractBaseUser) -> str | None:
    """After a calibration item is submitted: the rater's next calibration item, else None,
    and then their completion (with the agreement they are shown) is recorded, once."""
    handle = next_calibration_handle(study=study, user=clinician)
    if handle is not None:
        return handle
    if CalibrationCompletion.objects.filter(study=study, clinician=clinician).exists():
        return None  # a revision after completion: what they were shown then stays
    state = rater_calibration(study=study, user=clinician)
    if not state.complete:
        return None
    summary = state.agreement.as_dict() if state.agreement else {}
    completion, created = CalibrationCompletion.objects.get_or_create(
        study=study,
        clinician=clinician,
        defaults={"completed_at": timezone.now(), "n_items": state.total, "summary": summary},
    )
    if not created:  # a concurrent submit of the same rater recorded it
        return None
    audit.record(
        actor=clinician,
        action=COMPLETE_ACTION,
        target=completion,
        study=study,
        after={"n_items": state.total, **summary},
    )
    return None
