"""Writes that set a rating study up: the rubric, the study's settings, its lock."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from annotation import audit
from annotation.errors import AnnotationError
from annotation.models import RatingStudy, RubricCriterion, RubricTemplate, StudyMembership
from annotation.services.membership import add_member
from delphi.models import TaxonomyVersion

MEDHELM_RUBRIC_FIXTURE = Path(settings.BASE_DIR) / "fixtures" / "medhelm_rubric.json"


CRITERION_FIELDS = (
    "key",
    "label",
    "definition",
    "scale_min",
    "scale_max",
    "anchors",
    "allow_cannot_assess",
    "allows_decimals",
)


def ensure_medhelm_rubric_template() -> RubricTemplate:
    """The MedHELM rubric (accuracy, completeness, clarity; 1-5), from the shipped fixture."""
    data = json.loads(MEDHELM_RUBRIC_FIXTURE.read_text(encoding="utf-8"))
    template, _ = RubricTemplate.objects.get_or_create(
        name=data["name"],
        defaults={"description": data["description"], "criteria": data["criteria"]},
    )
    return template


def validate_criteria(criteria: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Check a list of criterion dicts; raise AnnotationError naming the criterion and field."""
    if not criteria:
        raise AnnotationError("a rubric needs at least one criterion", field="criteria")
    cleaned: list[dict[str, Any]] = []
    seen: set[str] = set()
    for pos, raw in enumerate(criteria):
        where = f"criteria[{pos}]"
        unknown = set(raw) - set(CRITERION_FIELDS)
        if unknown:
            raise AnnotationError(f"unknown fields {sorted(unknown)}", field=where)
        key = str(raw.get("key", "")).strip()
        if not key or not key.replace("_", "").replace("-", "").isalnum():
            raise AnnotationError("needs letters, digits, - or _", field=f"{where}.key")
        if key in seen:
            raise AnnotationError(f"{key!r} appears twice", field=f"{where}.key")
        seen.add(key)
        try:
            lo, hi = int(raw.get("scale_min", 1)), int(raw.get("scale_max", 5))
        except (TypeError, ValueError) as exc:
            raise AnnotationError(
                "scale_min and scale_max must be integers", field=f"{where}.scale"
            ) from exc
        if not 0 <= lo < hi <= 100:
            raise AnnotationError(
                f"needs 0 <= scale_min < scale_max <= 100, got {lo}..{hi}", field=f"{where}.scale"
            )
        anchors = raw.get("anchors") or {}
        if not isinstance(anchors, Mapping):
            raise AnnotationError("must map scale points to text", field=f"{where}.anchors")
        for point in anchors:
            if not str(point).lstrip("-").isdigit() or not lo <= int(point) <= hi:
                raise AnnotationError(
                    f"point {point!r} is outside {lo}..{hi}", field=f"{where}.anchors"
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
                "allows_decimals": bool(raw.get("allows_decimals", False)),
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
        raise AnnotationError("a study needs a name", field="name")
    if ratings_per_item < 1:
        raise AnnotationError("must be at least 1", field="ratings_per_item")
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
        raise AnnotationError(f"unknown settings {sorted(unknown)}", field="settings")
    if "name" in changes and not str(changes["name"]).strip():
        raise AnnotationError("a study needs a name", field="name")
    if "ratings_per_item" in changes and int(changes["ratings_per_item"]) < 1:
        raise AnnotationError("must be at least 1", field="ratings_per_item")
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


def _has_decimals(criterion: RubricCriterion) -> bool:
    """Whether an imported rating of `criterion` lies between two whole points."""
    values = criterion.imported_ratings.values_list("value", flat=True)
    return any(not float(v).is_integer() for v in values.iterator())


def _replace_criteria(
    *, study: RatingStudy, criteria: Sequence[Mapping[str, Any]], actor: AbstractBaseUser
) -> None:
    cleaned = validate_criteria(criteria)
    current = {c.key: c for c in study.criteria.all()}
    rated = (
        study.assignments.filter(ratings__isnull=False).exists() or study.imported_ratings.exists()
    )
    if rated:
        new_keys = [c["key"] for c in cleaned]
        if sorted(new_keys) != sorted(current):
            raise AnnotationError(
                "ratings exist already: criteria can be relabelled but not added, removed or renamed",
                field="criteria",
            )
        for c in cleaned:
            old = current[c["key"]]
            if (old.scale_min, old.scale_max) != (c["scale_min"], c["scale_max"]):
                raise AnnotationError(
                    "ratings exist already: the scale cannot change", field=f"criteria.{c['key']}"
                )
            if old.allows_decimals and not c["allows_decimals"] and _has_decimals(old):
                raise AnnotationError(
                    "imported ratings between the scale points exist: decimals stay allowed",
                    field=f"criteria.{c['key']}",
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
