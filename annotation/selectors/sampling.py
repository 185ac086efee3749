"""Reads for the sample draw: the study's items as sampler units, the draw in force, the
items it deals to clinicians, and the record a report states."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from annotation import models
from annotation.models import Item, RatingStudy, SampleDraw
from annotation.sampling import Unit
from delphi.models import TaxonomyNode

NO_CATEGORY = "(no category)"
NO_SUBCATEGORY = "(no subcategory)"
NO_BENCHMARK = "(no benchmark)"
CASE_KEYS = {"external_id": "external id", "input_text": "input text"}


def _node_names(study: RatingStudy) -> dict[int, tuple[str, str]]:
    """Taxonomy node id -> (category name, subcategory name), walking up parents."""
    used = Item.objects.filter(study=study, taxonomy_node__isnull=False).values(
        "taxonomy_node__version_id"
    )
    nodes = {
        pk: (parent, kind, name)
        for pk, parent, kind, name in TaxonomyNode.objects.filter(version_id__in=used).values_list(
            "pk", "parent_id", "kind", "name"
        )
    }
    out: dict[int, tuple[str, str]] = {}
    for pk in nodes:
        category, subcategory, current, seen = NO_CATEGORY, NO_SUBCATEGORY, pk, set()
        while current is not None and current not in seen:
            seen.add(current)
            parent, kind, name = nodes[current]
            if kind == TaxonomyNode.Kind.SUBCATEGORY:
                subcategory = name
            if kind == TaxonomyNode.Kind.CATEGORY:
                category = name
            current = parent
        out[pk] = (category, subcategory)
    return out


def sample_units(*, study: RatingStudy, case_key: str = "external_id") -> list[Unit]:
    """Every item of the study as a sampler unit: its case (items of one case share their
    external id, or their input text) and its category, subcategory, benchmark and model."""
    names = _node_names(study)
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
        "drawn_by": draw.created_by.get_username() if draw.created_by else None,
        "drawn_at": draw.created_at.isoformat(),
    }
