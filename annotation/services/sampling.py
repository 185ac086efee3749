"""Writes for the sample draw: a seeded stratified draw recorded with the study (and
audited), after which assignment deals only the drawn items."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q

from annotation import audit, sampling
from annotation.errors import AnnotationError
from annotation.locking import refuse_if_locked
from annotation.models import Assignment, ImportedRating, Item, RatingStudy, SampleDraw
from annotation.selectors.sampling import CASE_KEYS, sample_units
from annotation.services.assignment import assign_items

#: How many dropped items a refusal names before it says "and N more".
NAMED_IN_REFUSAL = 5


def new_seed() -> int:
    """A seed for a draw whose coordinator gave none (recorded, so the draw can be repeated)."""
    return secrets.randbits(31)


def plan_draw(
    *,
    study: RatingStudy,
    keys: Sequence[str],
    seed: int,
    total: int | None = None,
    quotas: Mapping[str, int] | None = None,
    paired: bool = True,
    case_key: str = "external_id",
) -> sampling.Draw:
    """The draw these settings give on the study's items now, without recording it (the
    page's preview and the command's --preview)."""
    if case_key not in CASE_KEYS:
        raise AnnotationError(
            f"unknown case key {case_key!r}; use one of {', '.join(CASE_KEYS)}", field="case_key"
        )
    units = sample_units(study=study, case_key=case_key)
    if not units:
        raise AnnotationError(
            "the study has no items to draw from: import items first", field="total"
        )
    return sampling.draw(units, keys=keys, seed=seed, total=total, quotas=quotas, paired=paired)


def _collected_on(study: RatingStudy, dropped: set[int]) -> list[str]:
    """External ids (with model) of dropped items that already hold clinician work: ratings
    (draft or submitted), imported ratings, or an assignment started or submitted."""
    rated = Item.objects.filter(study=study, pk__in=dropped).filter(
        Q(assignments__ratings__isnull=False)
        | Q(
            assignments__status__in=[
                Assignment.Status.IN_PROGRESS,
                Assignment.Status.SUBMITTED,
            ]
        )
        | Q(pk__in=ImportedRating.objects.filter(study=study).values("item_id"))
    )
    return [
        f"{e} [{m}]"
        for e, m in rated.distinct().order_by("pk").values_list("external_id", "model_name")
    ]


def _summary(study: RatingStudy, draw: sampling.Draw, case_key: str) -> dict[str, Any]:
    return {
        "n_items_drawn": len(draw.item_ids),
        "n_items_study": Item.objects.filter(study=study).count(),
        "n_units_drawn": draw.total,
        "unit": "case" if draw.paired else "item",
        "models": list(draw.models),
        "unpaired_cases": [
            {"stratum": label, "case": case[:200], "missing_models": list(lacks)}
            for label, case, lacks in draw.unpaired_cases
        ],
        "case_key": CASE_KEYS[case_key],
        # asked to stratify by model in a paired draw: balanced by the pairing instead
        "model_by_pairing": draw.model_by_pairing,
    }


@transaction.atomic
def draw_sample(
    *,
    study: RatingStudy,
    actor: AbstractBaseUser | None,
    keys: Sequence[str],
    seed: int | None = None,
    total: int | None = None,
    quotas: Mapping[str, int] | None = None,
    paired: bool = True,
    case_key: str = "external_id",
) -> SampleDraw:
    """Draw the items clinicians will rate and record the draw with the study.

    Refused (nothing changes) when the study is locked, when a quota exceeds its stratum, or
    when the draw would drop items that already hold clinician ratings. When the study
    already has assignments they are rebalanced onto the drawn items (started work stays)."""
    study = RatingStudy.objects.select_for_update().get(pk=study.pk)
    refuse_if_locked(study=study, error=AnnotationError, what="sample")
    seed = new_seed() if seed is None else seed
    draw = plan_draw(
        study=study,
        keys=keys,
        seed=seed,
        total=total,
        quotas=quotas,
        paired=paired,
        case_key=case_key,
    )
    drawn = set(draw.item_ids)
    dropped = set(Item.objects.filter(study=study).values_list("pk", flat=True)) - drawn
    collected = _collected_on(study, dropped)
    if collected:
        named = ", ".join(collected[:NAMED_IN_REFUSAL])
        more = (
            f" and {len(collected) - NAMED_IN_REFUSAL} more"
            if len(collected) > NAMED_IN_REFUSAL
            else ""
        )
        raise AnnotationError(
            f"this draw would drop {len(collected)} item{'s' if len(collected) != 1 else ''} "
            f"on which clinicians have already rated: {named}{more}. Keep them by quota or "
            f"seed, or draw a larger sample",
            field="total",
        )
    before = SampleDraw.objects.filter(study=study).values_list("pk", "seed").first()
    record = SampleDraw.objects.create(
        study=study,
        seed=seed,
        rule=SampleDraw.Rule.QUOTAS if quotas is not None else SampleDraw.Rule.PROPORTIONAL,
        total=total if quotas is None else None,
        quotas=dict(quotas or {}),
        strata_keys=list(draw.keys),
        paired=paired,
        case_key=case_key,
        strata=[s.__dict__ for s in draw.strata],
        summary=_summary(study, draw, case_key),
        created_by=actor if actor is not None and actor.is_authenticated else None,
    )
    record.items.set(sorted(drawn))
    reassigned = None
    if Assignment.objects.filter(study=study).exists():
        reassigned = assign_items(study=study, actor=actor)
    audit.record(
        actor=actor,
        action="sample.draw",
        target=record,
        study=study,
        before={"draw": before[0], "seed": before[1]} if before else None,
        after={
            "seed": seed,
            "rule": record.rule,
            "total": record.total,
            "quotas": record.quotas,
            "strata_keys": record.strata_keys,
            "paired": paired,
            "model_by_pairing": draw.model_by_pairing,
            "items_drawn": len(drawn),
            "strata": record.strata,
            "assignments_created": reassigned,
        },
    )
    return record
