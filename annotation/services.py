"""Writes for rating studies: set-up, membership, items, assignment and ratings.

Every function takes keyword-only arguments, runs in one transaction and writes an audit row
for each user-facing change.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Count, F, Max, Q
from django.utils import timezone

from annotation import audit
from annotation.design import balanced_design
from annotation.models import (
    Assignment,
    AuditEvent,
    Item,
    Rating,
    RatingStudy,
    RubricCriterion,
    RubricTemplate,
    StudyMembership,
)
from delphi.models import TaxonomyNode, TaxonomyVersion

MEDHELM_RUBRIC_FIXTURE = Path(settings.BASE_DIR) / "fixtures" / "medhelm_rubric.json"
PSEUDONYM_PREFIX = {
    StudyMembership.Role.CLINICIAN: "R",
    StudyMembership.Role.COORDINATOR: "C",
    StudyMembership.Role.RESEARCHER: "S",
}
CRITERION_FIELDS = (
    "key",
    "label",
    "definition",
    "scale_min",
    "scale_max",
    "anchors",
    "allow_cannot_assess",
)


# --- rubric and study set-up -------------------------------------------------------------


def ensure_medhelm_rubric_template() -> RubricTemplate:
    """The MedHELM rubric (accuracy, completeness, clarity; 1-5), from the shipped fixture."""
    data = json.loads(MEDHELM_RUBRIC_FIXTURE.read_text(encoding="utf-8"))
    template, _ = RubricTemplate.objects.get_or_create(
        name=data["name"],
        defaults={"description": data["description"], "criteria": data["criteria"]},
    )
    return template


def validate_criteria(criteria: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Check a list of criterion dicts; raise ValidationError naming the criterion and field."""
    if not criteria:
        raise ValidationError({"criteria": "a rubric needs at least one criterion"})
    cleaned: list[dict[str, Any]] = []
    seen: set[str] = set()
    for pos, raw in enumerate(criteria):
        where = f"criteria[{pos}]"
        unknown = set(raw) - set(CRITERION_FIELDS)
        if unknown:
            raise ValidationError({where: f"unknown fields {sorted(unknown)}"})
        key = str(raw.get("key", "")).strip()
        if not key or not key.replace("_", "").replace("-", "").isalnum():
            raise ValidationError({f"{where}.key": "needs letters, digits, - or _"})
        if key in seen:
            raise ValidationError({f"{where}.key": f"{key!r} appears twice"})
        seen.add(key)
        try:
            lo, hi = int(raw.get("scale_min", 1)), int(raw.get("scale_max", 5))
        except (TypeError, ValueError) as exc:
            raise ValidationError(
                {f"{where}.scale": "scale_min and scale_max must be integers"}
            ) from exc
        if not 0 <= lo < hi <= 100:
            raise ValidationError(
                {f"{where}.scale": f"needs 0 <= scale_min < scale_max <= 100, got {lo}..{hi}"}
            )
        anchors = raw.get("anchors") or {}
        if not isinstance(anchors, Mapping):
            raise ValidationError({f"{where}.anchors": "must map scale points to text"})
        for point in anchors:
            if not str(point).lstrip("-").isdigit() or not lo <= int(point) <= hi:
                raise ValidationError(
                    {f"{where}.anchors": f"point {point!r} is outside {lo}..{hi}"}
                )
        cleaned.append(
            {
                "key": key,
                "label": str(raw.get("label") or key).strip(),
                "definition": str(raw.get("definition", "")),
                "scale_min": lo,
                "scale_max": hi,
                "anchors": {str(int(p)): str(t) for p, t in anchors.items()},
                "allow_cannot_assess": bool(raw.get("allow_cannot_assess", False)),
            }
        )
    return cleaned


@transaction.atomic
def create_study(
    *,
    name: str,
    created_by: AbstractBaseUser,
    criteria: Sequence[Mapping[str, Any]],
    taxonomy_version: TaxonomyVersion | None = None,
    instructions: str = "",
    ratings_per_item: int = 2,
    show_reference: bool = True,
    comment_required_at_or_below: int | None = None,
    exclusion_metadata_key: str = "",
) -> RatingStudy:
    """Create a study with its rubric; its creator becomes its first coordinator."""
    if not name.strip():
        raise ValidationError({"name": "a study needs a name"})
    if ratings_per_item < 1:
        raise ValidationError({"ratings_per_item": "must be at least 1"})
    cleaned = validate_criteria(criteria)
    study = RatingStudy.objects.create(
        name=name.strip(),
        instructions=instructions,
        taxonomy_version=taxonomy_version,
        ratings_per_item=ratings_per_item,
        show_reference=show_reference,
        comment_required_at_or_below=comment_required_at_or_below,
        exclusion_metadata_key=exclusion_metadata_key,
        created_by=created_by,
    )
    RubricCriterion.objects.bulk_create(
        RubricCriterion(study=study, position=pos, **c) for pos, c in enumerate(cleaned)
    )
    audit.record(
        actor=created_by,
        action="study.create",
        target=study,
        study=study,
        after={"name": study.name, "ratings_per_item": ratings_per_item, "criteria": cleaned},
    )
    add_member(
        study=study, user=created_by, role=StudyMembership.Role.COORDINATOR, actor=created_by
    )
    return study


@transaction.atomic
def add_member(
    *, study: RatingStudy, user: AbstractBaseUser, role: str, actor: AbstractBaseUser | None
) -> StudyMembership:
    """Give a user a role in a study, with a pseudonym stable for the life of the study.

    Adding an existing member again reactivates them and keeps their pseudonym.
    """
    if role not in StudyMembership.Role.values:
        raise ValidationError({"role": f"unknown role {role!r}"})
    existing = (
        StudyMembership.objects.select_for_update()
        .filter(study=study, user=user, role=role)
        .first()
    )
    if existing is not None:
        if not existing.is_active:
            existing.is_active = True
            existing.save(update_fields=["is_active"])
            if role == StudyMembership.Role.CLINICIAN:
                _restore_withdrawn_drafts(study=study, user=user)
            audit.record(actor=actor, action="membership.reactivate", target=existing, study=study)
            _rebalance_if_assigned(study=study, role=role, actor=actor)
        return existing
    prefix = PSEUDONYM_PREFIX[role]
    taken = StudyMembership.objects.filter(study=study, role=role).count()
    membership = StudyMembership.objects.create(
        study=study, user=user, role=role, pseudonym=f"{prefix}{taken + 1:02d}"
    )
    audit.record(
        actor=actor,
        action="membership.add",
        target=membership,
        study=study,
        after={"user_id": user.pk, "role": role, "pseudonym": membership.pseudonym},
    )
    _rebalance_if_assigned(study=study, role=role, actor=actor)
    return membership


def _restore_withdrawn_drafts(*, study: RatingStudy, user: AbstractBaseUser) -> None:
    """A returning clinician gets back the drafts they left, where the item still lacks raters."""
    k = study.ratings_per_item
    active = Count("assignments", filter=~Q(assignments__status=Assignment.Status.WITHDRAWN))
    short = Item.objects.filter(study=study).annotate(n=active).filter(n__lt=k).values("pk")
    Assignment.objects.filter(
        study=study, clinician=user, status=Assignment.Status.WITHDRAWN, item__in=short
    ).update(status=Assignment.Status.IN_PROGRESS)


def _rebalance_if_assigned(
    *, study: RatingStudy, role: str, actor: AbstractBaseUser | None
) -> None:
    """A clinician joining or leaving a study already under way gets a share of unstarted work."""
    if (
        role == StudyMembership.Role.CLINICIAN
        and study.assignments.exists()
        and not study.is_locked
    ):
        assign_items(study=study, actor=actor)


# --- items ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ItemRow:
    """One item as read from an import, before it is saved."""

    external_id: str
    input_text: str
    output_text: str
    model_name: str
    reference_text: str = ""
    benchmark: str = ""
    taxonomy_node_id: int | None = None
    metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ItemsCreated:
    created: int
    unchanged: int


@transaction.atomic
def create_items(
    *,
    study: RatingStudy,
    rows: Iterable[ItemRow],
    actor: AbstractBaseUser | None,
    batch_size: int = 2000,
) -> ItemsCreated:
    """Add items; an (external id, model) already in the study is left as it is.

    Rows must be valid already (the importers check them); the database constraint is the
    last guard against duplicates.
    """
    existing = set(Item.objects.filter(study=study).values_list("external_id", "model_name"))
    fresh: list[Item] = []
    unchanged = 0
    for row in rows:
        key = (row.external_id, row.model_name)
        if key in existing:
            unchanged += 1
            continue
        existing.add(key)
        fresh.append(
            Item(
                study=study,
                external_id=row.external_id,
                input_text=row.input_text,
                output_text=row.output_text,
                model_name=row.model_name,
                reference_text=row.reference_text,
                benchmark=row.benchmark,
                taxonomy_node_id=row.taxonomy_node_id,
                metadata=dict(row.metadata or {}),
            )
        )
    Item.objects.bulk_create(fresh, batch_size=batch_size)
    if fresh:
        audit.record(
            actor=actor,
            action="items.import",
            target=study,
            study=study,
            after={"created": len(fresh), "unchanged": unchanged},
        )
    return ItemsCreated(created=len(fresh), unchanged=unchanged)


def taxonomy_node_for(*, study: RatingStudy, name: str) -> TaxonomyNode | None:
    """A node of the study's taxonomy version by exact name (tasks first, then subcategories)."""
    if study.taxonomy_version_id is None or not name:
        return None
    nodes = TaxonomyNode.objects.filter(version_id=study.taxonomy_version_id, name=name)
    order = {
        TaxonomyNode.Kind.TASK: 0,
        TaxonomyNode.Kind.SUBCATEGORY: 1,
        TaxonomyNode.Kind.CATEGORY: 2,
    }
    return min(nodes, key=lambda n: order[n.kind], default=None)


# --- assignment ----------------------------------------------------------------------------


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
    if study.is_locked:
        raise ValidationError({"study": "the study is locked"})
    if seed is None:
        seed = study.assignment_seed if study.assignment_seed is not None else secrets.randbits(32)
    memberships = list(
        StudyMembership.objects.filter(
            study=study, role=StudyMembership.Role.CLINICIAN, is_active=True
        ).select_related("user")
    )
    clinician_ids = [m.user_id for m in memberships]
    lookup = {}
    for m in memberships:
        lookup[m.user.get_username()] = m.user_id
        if m.user.email:
            lookup[m.user.email] = m.user_id
    items = list(Item.objects.filter(study=study).order_by("pk"))
    kept = Assignment.objects.filter(study=study).exclude(
        status__in=[Assignment.Status.PENDING, Assignment.Status.WITHDRAWN]
    )
    fixed: dict[int, set[int]] = {}
    for item_id, user_id in kept.values_list("item_id", "clinician_id"):
        fixed.setdefault(item_id, set()).add(user_id)
    # Unstarted work is dealt again. A withdrawn assignment holding a draft stays as history
    # (its clinician left); one without any rating is of no further use.
    Assignment.objects.filter(study=study, status=Assignment.Status.PENDING).delete()
    Assignment.objects.filter(
        study=study, status=Assignment.Status.WITHDRAWN, ratings__isnull=True
    ).delete()
    excluded = _excluded_users(study, items, lookup)
    # A withdrawn draft still occupies its (item, clinician) pair: never deal it twice.
    for item_id, user_id in Assignment.objects.filter(
        study=study, status=Assignment.Status.WITHDRAWN
    ).values_list("item_id", "clinician_id"):
        excluded.setdefault(item_id, set()).add(user_id)
    design = balanced_design(
        items=[i.pk for i in items],
        raters=clinician_ids,
        k=study.ratings_per_item,
        seed=seed,
        excluded=excluded,
        fixed=fixed,
    )
    fixed_positions = dict(
        kept.values("clinician_id").annotate(top=Max("position")).values_list("clinician_id", "top")
    )
    new_rows: list[Assignment] = []
    for item_id, user_ids in design.new_raters.items():
        for user_id in user_ids:
            new_rows.append(
                Assignment(study=study, item_id=item_id, clinician_id=user_id, position=0)
            )
    # New work goes after a clinician's kept work, in the clinician's own random order.
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
    Assignment.objects.bulk_create(new_rows, batch_size=2000)
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
        },
    )
    return len(new_rows)


# --- ratings -------------------------------------------------------------------------------


@dataclass(frozen=True)
class CriterionAnswer:
    value: int | None = None
    cannot_assess: bool = False
    comment: str = ""


def _check_answers(
    *, study: RatingStudy, answers: Mapping[str, CriterionAnswer], complete: bool
) -> dict[str, RubricCriterion]:
    criteria = {c.key: c for c in study.criteria.all()}
    errors: dict[str, str] = {}
    for key, answer in answers.items():
        criterion = criteria.get(key)
        if criterion is None:
            errors[key] = f"unknown criterion {key!r}; this study has {sorted(criteria)}"
            continue
        if answer.cannot_assess:
            if not criterion.allow_cannot_assess:
                errors[key] = "this criterion does not allow 'cannot assess'"
            elif answer.value is not None:
                errors[key] = "give either a value or 'cannot assess', not both"
            continue
        if answer.value is None:
            if complete:
                errors[key] = "a value is required to submit"
            continue
        if isinstance(answer.value, bool) or not isinstance(answer.value, int):
            errors[key] = f"value must be a whole number, got {answer.value!r}"
        elif not criterion.scale_min <= answer.value <= criterion.scale_max:
            errors[key] = (
                f"value {answer.value} is outside the scale {criterion.scale_min}..{criterion.scale_max}"
            )
        elif (
            complete
            and study.comment_required_at_or_below is not None
            and answer.value <= study.comment_required_at_or_below
            and not answer.comment.strip()
        ):
            errors[key] = (
                f"a comment is required for a score of {study.comment_required_at_or_below} or lower"
            )
    if complete:
        for key in criteria:
            if key not in answers:
                errors.setdefault(key, "missing: every criterion needs a value to submit")
    if errors:
        raise ValidationError(errors)
    return criteria


def _lock_assignment(assignment_id: int, clinician: AbstractBaseUser) -> Assignment:
    """Lock the assignment row (only it: concurrent submits of other assignments must not
    queue behind one study row) and read the study's lock under a share lock, so that a
    submit cannot commit after the study was locked."""
    assignment = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("study")
        .filter(pk=assignment_id)
        .first()
    )
    if assignment is None or assignment.clinician_id != clinician.pk:
        raise ValidationError({"assignment": "this item is not assigned to you"})
    if assignment.status == Assignment.Status.WITHDRAWN:
        raise ValidationError({"assignment": "this assignment was withdrawn"})
    if _study_locked(assignment.study_id):
        raise ValidationError({"study": "the study is locked; ratings can no longer change"})
    return assignment


def _study_locked(study_id: int) -> bool:
    if connection.vendor == "postgresql":
        # FOR SHARE: many submits hold it at once; set_study_lock's FOR UPDATE waits for them.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT locked_at FROM annotation_ratingstudy WHERE id = %s FOR SHARE", [study_id]
            )
            row = cursor.fetchone()
        return row is not None and row[0] is not None
    # SQLite serialises writing transactions (IMMEDIATE), so a plain read is current.
    return RatingStudy.objects.filter(pk=study_id, locked_at__isnull=False).exists()


def _rating_state(rating: Rating | None) -> dict[str, Any] | None:
    if rating is None:
        return None
    return {"value": rating.value, "cannot_assess": rating.cannot_assess, "comment": rating.comment}


def _write_answers(
    assignment: Assignment,
    criteria: Mapping[str, RubricCriterion],
    answers: Mapping[str, CriterionAnswer],
    *,
    submitting: bool,
    now: Any,
) -> list[tuple[Rating, dict[str, Any] | None, dict[str, Any]]]:
    """Create or update the assignment's rating rows (the assignment row is locked, so no
    one else writes them meanwhile; the unique constraint is the last guard). Returns
    (rating, state before, state after) for each answer that changed something."""
    existing = {r.criterion_id: r for r in Rating.objects.filter(assignment=assignment)}
    changed = []
    to_create = []
    for key, answer in answers.items():
        criterion = criteria[key]
        after = {
            "value": answer.value,
            "cannot_assess": answer.cannot_assess,
            "comment": answer.comment,
        }
        rating = existing.get(criterion.pk)
        if rating is None:
            rating = Rating(assignment=assignment, criterion=criterion, **after)
            if submitting:
                rating.first_value, rating.first_cannot_assess = answer.value, answer.cannot_assess
                rating.first_submitted_at = now
            to_create.append(rating)
            changed.append((rating, None, after))
            continue
        before = _rating_state(rating)
        first_time = submitting and rating.first_submitted_at is None
        if before == after and not first_time:
            continue
        rating.value, rating.cannot_assess, rating.comment = (
            answer.value,
            answer.cannot_assess,
            answer.comment,
        )
        fields = ["value", "cannot_assess", "comment", "updated_at"]
        if first_time:
            rating.first_value, rating.first_cannot_assess = answer.value, answer.cannot_assess
            rating.first_submitted_at = now
            fields += ["first_value", "first_cannot_assess", "first_submitted_at"]
        rating.save(update_fields=fields)
        changed.append((rating, None if first_time else before, after))
    Rating.objects.bulk_create(to_create)
    return changed


@transaction.atomic
def save_draft(
    *,
    assignment_id: int,
    clinician: AbstractBaseUser,
    answers: Mapping[str, CriterionAnswer],
    time_spent_seconds: float = 0.0,
) -> Assignment:
    """Autosave: keep what the clinician has entered so far. A submitted assignment keeps its
    submitted values until the clinician submits again (drafts never overwrite them)."""
    assignment = _lock_assignment(assignment_id, clinician)
    criteria = _check_answers(study=assignment.study, answers=answers, complete=False)
    seconds = _checked_seconds(time_spent_seconds)
    if assignment.status == Assignment.Status.SUBMITTED:
        # Only time on item changes; updated_at stays, since it versions the answers (the
        # page's local copy of a revision in progress is tied to it).
        Assignment.objects.filter(pk=assignment.pk).update(
            time_spent_seconds=F("time_spent_seconds") + seconds
        )
        assignment.refresh_from_db(fields=["time_spent_seconds"])
        return assignment
    _write_answers(assignment, criteria, answers, submitting=False, now=timezone.now())
    assignment.status = Assignment.Status.IN_PROGRESS
    assignment.started_at = assignment.started_at or timezone.now()
    assignment.time_spent_seconds += seconds
    assignment.save(update_fields=["status", "started_at", "time_spent_seconds", "updated_at"])
    return assignment


def _checked_seconds(seconds: float) -> float:
    if seconds < 0:
        raise ValidationError({"time_spent_seconds": "cannot be negative"})
    # A tab left open overnight is not rating time: cap one report at an hour.
    return min(float(seconds), 3600.0)


@transaction.atomic
def submit_assignment(
    *,
    assignment_id: int,
    clinician: AbstractBaseUser,
    answers: Mapping[str, CriterionAnswer],
    time_spent_seconds: float = 0.0,
) -> Assignment:
    """Submit (or revise) all criteria of one assignment at once.

    Idempotent: submitting the same answers again changes nothing and writes no audit row.
    Every changed value of an already submitted rating writes an audit row (old, new, who).
    """
    assignment = _lock_assignment(assignment_id, clinician)
    study = assignment.study
    criteria = _check_answers(study=study, answers=answers, complete=True)
    seconds = _checked_seconds(time_spent_seconds)
    now = timezone.now()
    was_submitted = assignment.status == Assignment.Status.SUBMITTED
    changes = _write_answers(assignment, criteria, answers, submitting=True, now=now)
    AuditEvent.objects.bulk_create(
        AuditEvent(
            actor=clinician,
            study=study,
            action="rating.revise" if was_submitted and before is not None else "rating.submit",
            target_type="Rating",
            target_id=str(rating.pk),
            before=before,
            after=after,
        )
        for rating, before, after in changes
        if before is None or was_submitted
    )
    if was_submitted and not changes and not seconds:
        return assignment  # a retried or double submit: nothing to do
    assignment.status = Assignment.Status.SUBMITTED
    assignment.started_at = assignment.started_at or now
    assignment.first_submitted_at = assignment.first_submitted_at or now
    if changes or not was_submitted:
        assignment.submitted_at = now
    assignment.time_spent_seconds += seconds
    assignment.save(
        update_fields=[
            "status",
            "started_at",
            "first_submitted_at",
            "submitted_at",
            "time_spent_seconds",
            "updated_at",
        ]
    )
    return assignment


# --- coordinator actions -------------------------------------------------------------------


@transaction.atomic
def flag_assignment(
    *, assignment_id: int, clinician: AbstractBaseUser, flagged: bool, reason: str = ""
) -> Assignment:
    """A clinician flags (or unflags) an item for the coordinator, with a reason."""
    assignment = _lock_assignment(assignment_id, clinician)
    if flagged and not reason.strip():
        raise ValidationError({"reason": "say why you flag this item"})
    before = {"flagged": assignment.flagged, "reason": assignment.flag_reason}
    assignment.flagged = flagged
    assignment.flag_reason = reason.strip() if flagged else ""
    after = {"flagged": assignment.flagged, "reason": assignment.flag_reason}
    if before != after:
        assignment.save(update_fields=["flagged", "flag_reason", "updated_at"])
        audit.record(
            actor=clinician,
            action="assignment.flag" if flagged else "assignment.unflag",
            target=assignment,
            study=assignment.study,
            before=before,
            after=after,
        )
    return assignment


@transaction.atomic
def set_study_lock(*, study: RatingStudy, locked: bool, actor: AbstractBaseUser) -> RatingStudy:
    """Lock a study (ratings freeze) or unlock it again."""
    study = RatingStudy.objects.select_for_update().get(pk=study.pk)
    if study.is_locked == locked:
        return study
    before = {"locked_at": study.locked_at.isoformat() if study.locked_at else None}
    study.locked_at = timezone.now() if locked else None
    study.save(update_fields=["locked_at"])
    audit.record(
        actor=actor,
        action="study.lock" if locked else "study.unlock",
        target=study,
        study=study,
        before=before,
        after={"locked_at": study.locked_at.isoformat() if study.locked_at else None},
    )
    return study


STUDY_SETTINGS = (
    "name",
    "instructions",
    "ratings_per_item",
    "show_reference",
    "comment_required_at_or_below",
    "exclusion_metadata_key",
    "taxonomy_version_id",
)


@transaction.atomic
def update_study(
    *,
    study: RatingStudy,
    actor: AbstractBaseUser,
    changes: Mapping[str, Any],
    criteria: Sequence[Mapping[str, Any]] | None = None,
) -> RatingStudy:
    """Change a study's settings and, optionally, its rubric.

    Once any rating exists, criteria can be relabelled and re-anchored but keys and scales
    are frozen: changing them would change the meaning of ratings already given.
    """
    study = RatingStudy.objects.select_for_update().get(pk=study.pk)
    unknown = set(changes) - set(STUDY_SETTINGS)
    if unknown:
        raise ValidationError({"settings": f"unknown settings {sorted(unknown)}"})
    if "name" in changes and not str(changes["name"]).strip():
        raise ValidationError({"name": "a study needs a name"})
    if "ratings_per_item" in changes and int(changes["ratings_per_item"]) < 1:
        raise ValidationError({"ratings_per_item": "must be at least 1"})
    before = {f: getattr(study, f) for f in changes}
    for field_name, value in changes.items():
        setattr(study, field_name, value)
    study.save()
    after = {f: getattr(study, f) for f in changes}
    if before != after:
        audit.record(
            actor=actor,
            action="study.update",
            target=study,
            study=study,
            before=before,
            after=after,
        )
    if criteria is not None:
        _replace_criteria(study=study, criteria=criteria, actor=actor)
    return study


def _criterion_state(c: RubricCriterion) -> dict[str, Any]:
    return {f: getattr(c, f) for f in CRITERION_FIELDS}


def _replace_criteria(
    *, study: RatingStudy, criteria: Sequence[Mapping[str, Any]], actor: AbstractBaseUser
) -> None:
    cleaned = validate_criteria(criteria)
    current = {c.key: c for c in study.criteria.all()}
    rated = study.assignments.filter(ratings__isnull=False).exists()
    if rated:
        new_keys = [c["key"] for c in cleaned]
        if sorted(new_keys) != sorted(current):
            raise ValidationError(
                {
                    "criteria": "ratings exist already: criteria can be relabelled but not added, removed or renamed"
                }
            )
        for c in cleaned:
            old = current[c["key"]]
            if (old.scale_min, old.scale_max) != (c["scale_min"], c["scale_max"]):
                raise ValidationError(
                    {f"criteria.{c['key']}": "ratings exist already: the scale cannot change"}
                )
    before = [_criterion_state(c) for c in current.values()]
    for pos, c in enumerate(cleaned):
        existing = current.pop(c["key"], None)
        if existing is None:
            RubricCriterion.objects.create(study=study, position=pos, **c)
        else:
            for f, v in c.items():
                setattr(existing, f, v)
            existing.position = pos
            existing.save()
    for leftover in current.values():  # only reachable while nothing is rated
        leftover.delete()
    if before != cleaned:
        audit.record(
            actor=actor,
            action="study.rubric",
            target=study,
            study=study,
            before={"criteria": before},
            after={"criteria": cleaned},
        )


@transaction.atomic
def remove_member(
    *, study: RatingStudy, user: AbstractBaseUser, role: str, actor: AbstractBaseUser
) -> None:
    """Deactivate a member. A clinician's unstarted work is dealt to the others; what they
    started or submitted stays theirs (and counts)."""
    membership = (
        StudyMembership.objects.select_for_update()
        .filter(study=study, user=user, role=role)
        .first()
    )
    if membership is None or not membership.is_active:
        raise ValidationError({"member": "this user does not hold that role in the study"})
    if (
        role == StudyMembership.Role.COORDINATOR
        and not StudyMembership.objects.filter(study=study, role=role, is_active=True)
        .exclude(pk=membership.pk)
        .exists()
    ):
        raise ValidationError({"member": "a study needs at least one coordinator"})
    membership.is_active = False
    membership.save(update_fields=["is_active"])
    audit.record(
        actor=actor,
        action="membership.remove",
        target=membership,
        study=study,
        before={"user_id": user.pk, "role": role, "pseudonym": membership.pseudonym},
    )
    if role == StudyMembership.Role.CLINICIAN:
        # Their submitted ratings stay and count; a draft they will never finish does not.
        Assignment.objects.filter(
            study=study,
            clinician=user,
            status__in=[Assignment.Status.PENDING, Assignment.Status.IN_PROGRESS],
        ).update(status=Assignment.Status.WITHDRAWN)
        _rebalance_if_assigned(study=study, role=role, actor=actor)
