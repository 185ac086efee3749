"""Reads for the sample draw: the study's items as sampler units, the draw in force, the
items it deals to clinicians, and the record a report states."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from annotation import models
from annotation.models import Item, RatingStudy, SampleDraw
from annotation.sampling import Unit, model_balance_note
from annotation.selectors.taxonomy import NO_CATEGORY, NO_SUBCATEGORY, category_names

NO_BENCHMARK = "(no benchmark)"
CASE_KEYS = {"external_id": "external id", "input_text": "input text"}


def sample_units(*, study: RatingStudy, case_key: str = "external_id") -> list[Unit]:
    """Every item of the study as a sampler unit: its case (items of one case share their
    external id, or their input text) and its category, subcategory, benchmark and model."""
    names = category_names(study=study)
    field = "input_text" if case_key == "input_text" else "external_id"
    rows = Item.objects.filter(study=study).order_by("pk")
    units = []
    for pk, case, model, bench, node in rows.values_list(
        "pk", field, "model_name", "benchmark", "taxonomy_node_id"
    ):
        category, subcategory = names.get(node, (NO_CATEGORY, NO_SUBCATEGORY))
        units.append(
            Unit(
                item_id=pk,
                case=case,
                model=model,
                values={
                    "category": category,
                    "subcategory": subcategory,
                    "benchmark": bench or NO_BENCHMARK,
                    "model": model,
                },
            )
        )
    return units


def current_draw(*, study: RatingStudy) -> SampleDraw | None:
    """The study's latest draw, the one in force; None when the study never drew a sample."""
    return SampleDraw.objects.filter(study=study).select_related("created_by").first()


def model_note(*, draw: SampleDraw) -> str:
    """What a recorded paired draw did with the model stratum it was asked for (balanced by
    the pairing, annotation.sampling); "" when none was asked."""
    summary = draw.summary or {}
    if not summary.get("model_by_pairing"):
        return ""
    return model_balance_note(
        n_models=len(summary.get("models", [])),
        n_cases=summary.get("n_units_drawn", 0),
        n_unpaired=len(summary.get("unpaired_cases", [])),
    )


def items_to_rate(*, study: RatingStudy) -> QuerySet[Item]:
    """The items clinicians are dealt: the current draw's, or every item without a draw."""
    return models.items_to_rate(study)


def sample_record(*, study: RatingStudy) -> dict[str, Any] | None:
    """The draw in force as a report's method records it (plain JSON values)."""
    draw = current_draw(study=study)
    if draw is None:
        return None
    return {
        "draw_id": draw.pk,
        "seed": draw.seed,
        "rule": draw.rule,
        "total": draw.total,
        "quotas": draw.quotas,
        "strata_keys": draw.strata_keys,
        "paired": draw.paired,
        "case_key": draw.case_key,
        "strata": draw.strata,
        "n_items_drawn": draw.summary.get("n_items_drawn"),
        "n_items_study": draw.summary.get("n_items_study"),
        "unpaired_cases": len(draw.summary.get("unpaired_cases", [])),
        "model_by_pairing": bool(draw.summary.get("model_by_pairing")),
        "n_models": len(draw.summary.get("models", [])),
        "drawn_by": draw.created_by.get_username() if draw.created_by else None,
        "drawn_at": draw.created_at.isoformat(),
    }
