"""Writes that deal items to clinicians: a balanced design turned into Assignment rows."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max, QuerySet

from annotation import audit
from annotation.design import Design, balanced_design
from annotation.errors import AnnotationError
from annotation.locking import refuse_if_locked
from annotation.models import (
    Assignment,
    CalibrationCompletion,
    CalibrationItem,
    Item,
    RatingStudy,
    StudyMembership,
    items_to_rate,
    new_assignment_handle,
)


@transaction.atomic
def assign_items(
    *, study: RatingStudy, actor: AbstractBaseUser | None, seed: int | None = None
) -> int:
    """(Re)balance the study's assignments over its active clinicians.

    Started or submitted work never moves. Unstarted assignments are withdrawn and dealt again,
    together with the slots still missing, so adding or removing a clinician mid-study only
    reshuffles unstarted work. Returns the number of assignments created.
    """
    study = RatingStudy.objects.select_for_update().get(pk=study.pk)
    refuse_if_locked(study=study, error=AnnotationError, what="assignments")
    if seed is None:
        seed = study.assignment_seed if study.assignment_seed is not None else secrets.randbits(32)
    memberships = list(
        StudyMembership.objects.filter(
            study=study, role=StudyMembership.Role.CLINICIAN, is_active=True
        ).select_related("user")
    )
    clinician_ids = [m.user_id for m in memberships]
    # with a sample drawn, only its items are dealt; the rest stay for the jury and metrics
    items = list(items_to_rate(study).order_by("pk"))
    kept = Assignment.objects.filter(study=study).exclude(
        status__in=[Assignment.Status.PENDING, Assignment.Status.WITHDRAWN]
    )
    fixed: dict[int, set[int]] = {}
    for item_id, user_id in kept.values_list("item_id", "clinician_id"):
        fixed.setdefault(item_id, set()).add(user_id)
    _clear_unstarted(study)
    design = balanced_design(
        items=[i.pk for i in items],
        raters=clinician_ids,
        k=study.ratings_per_item,
        seed=seed,
        excluded=_excluded_pairs(study, items, memberships),
        fixed=fixed,
    )
    new_rows = _new_assignments(study, design, kept)
    Assignment.objects.bulk_create(new_rows, batch_size=2000)
    # calibration items go to every rater apart from the design (annotation.services.calibration)
    calibration = deal_calibration(study=study)
    study.assignment_seed = seed
    study.save(update_fields=["assignment_seed"])
    audit.record(
        actor=actor,
        action="assignments.balance",
        target=study,
        study=study,
        after={
            "seed": seed,
            "created": len(new_rows),
            "kept": sum(len(v) for v in fixed.values()),
            "clinicians": len(clinician_ids),
            "calibration": calibration,
        },
    )
    return len(new_rows) + calibration


def _clear_unstarted(study: RatingStudy) -> None:
    """Unstarted work is dealt again. A withdrawn assignment holding a draft stays as history
    (its clinician left); one without any rating is of no further use."""
    Assignment.objects.filter(study=study, status=Assignment.Status.PENDING).delete()
    Assignment.objects.filter(
        study=study, status=Assignment.Status.WITHDRAWN, ratings__isnull=True
    ).delete()


def _excluded_pairs(
    study: RatingStudy, items: Sequence[Item], memberships: Sequence[StudyMembership]
) -> dict[int, set[int]]:
    """item -> clinicians who must not get it: those its metadata names, and those holding a
    withdrawn draft of it (that pair is taken: never deal it twice)."""
    lookup: dict[str, int] = {}
    for m in memberships:
        lookup[m.user.get_username()] = m.user_id
        if m.user.email:
            lookup[m.user.email] = m.user_id
    excluded = _excluded_users(study, items, lookup)
    for item_id, user_id in Assignment.objects.filter(
        study=study, status=Assignment.Status.WITHDRAWN
    ).values_list("item_id", "clinician_id"):
        excluded.setdefault(item_id, set()).add(user_id)
    return excluded


def _excluded_users(
    study: RatingStudy, items: Sequence[Item], clinicians: Mapping[str, int]
) -> dict[int, set[int]]:
    """Items whose metadata names clinicians (by username or e-mail) who must not rate them."""
    key = study.exclusion_metadata_key
    if not key:
        return {}
    excluded: dict[int, set[int]] = {}
    for item in items:
        named = item.metadata.get(key)
        if not named:
            continue
        names = [named] if isinstance(named, str) else list(named)
        ids = {clinicians[n] for n in names if n in clinicians}
        if ids:
            excluded[item.pk] = ids
    return excluded


def _new_assignments(
    study: RatingStudy, design: Design, kept: QuerySet[Assignment]
) -> list[Assignment]:
    """The design's new work as unsaved rows: after each clinician's kept work, in the
    clinician's own random order, each with a fresh random handle (the only name its rater
    sees it by: ids follow import order, handles follow nothing)."""
    fixed_positions = dict(
        kept.values("clinician_id").annotate(top=Max("position")).values_list("clinician_id", "top")
    )
    new_rows = [
        Assignment(
            study=study,
            item_id=item_id,
            clinician_id=user_id,
            position=0,
            handle=new_assignment_handle(),
        )
        for item_id, user_ids in design.new_raters.items()
        for user_id in user_ids
    ]
    rank = {
        (user_id, item_id): pos
        for user_id, order in design.orders.items()
        for pos, item_id in enumerate(order)
    }
    new_rows.sort(key=lambda a: (a.clinician_id, rank[(a.clinician_id, a.item_id)]))
    next_position: dict[int, int] = {}
    for row in new_rows:
        pos = next_position.get(row.clinician_id, (fixed_positions.get(row.clinician_id) or 0) + 1)
        row.position = pos
        next_position[row.clinician_id] = pos + 1
    return new_rows


def deal_calibration(*, study: RatingStudy) -> int:
    """Give every active clinician who has not completed calibration each calibration item
    they lack (after their own work; the resume redirect sends them to calibration first).
    A withdrawn calibration assignment of an active rater is restored. Returns how many
    were created. Called inside the caller's transaction (assign_items, marking)."""
    item_ids = list(CalibrationItem.objects.filter(study=study).values_list("item_id", flat=True))
    if not item_ids:
        return 0
    done = CalibrationCompletion.objects.filter(study=study).values_list("clinician_id")
    raters = list(
        StudyMembership.objects.filter(
            study=study, role=StudyMembership.Role.CLINICIAN, is_active=True, is_imported=False
        )
        .exclude(user_id__in=done)
        .values_list("user_id", flat=True)
    )
    existing = Assignment.objects.filter(study=study, item_id__in=item_ids, clinician_id__in=raters)
    for a in existing.filter(status=Assignment.Status.WITHDRAWN):
        a.status = (
            Assignment.Status.SUBMITTED
            if a.submitted_at is not None
            else Assignment.Status.IN_PROGRESS
            if a.ratings.exists()
            else Assignment.Status.PENDING
        )
        a.save(update_fields=["status", "updated_at"])
    have = set(existing.values_list("item_id", "clinician_id"))
    top = dict(
        Assignment.objects.filter(study=study, clinician_id__in=raters)
        .values("clinician_id")
        .annotate(top=Max("position"))
        .values_list("clinician_id", "top")
    )
    rows = []
    for user_id in raters:
        position = (top.get(user_id) or 0) + 1
        for item_id in item_ids:
            if (item_id, user_id) in have:
                continue
            rows.append(
                Assignment(
                    study=study,
                    item_id=item_id,
                    clinician_id=user_id,
                    position=position,
                    handle=new_assignment_handle(),
                )
            )
            position += 1
    Assignment.objects.bulk_create(rows)
    return len(rows)
