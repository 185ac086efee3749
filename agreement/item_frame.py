"""Reads for agreement: a study's items as one frame (item, external id, model, benchmark,
category), the frame every report groups its scores by (`agreement.selectors.score_data`
joins it to the long score table), and the items it leaves out."""

from __future__ import annotations

import pandas as pd

from annotation.models import Item, RatingStudy
from delphi.models import TaxonomyNode, TaxonomyVersion

NO_CATEGORY = "(no category)"
NO_BENCHMARK = "(no benchmark)"


def item_categories(*, study: RatingStudy) -> dict[int, str]:
    """Taxonomy node id -> name of its category (walking up parents). One query."""
    versions = TaxonomyVersion.objects.filter(nodes__items__study=study).values("pk")
    nodes = {
        pk: (parent_id, name)
        for pk, parent_id, name in TaxonomyNode.objects.filter(version__in=versions).values_list(
            "pk", "parent_id", "name"
        )
    }
    out: dict[int, str] = {}
    for pk in nodes:
        seen, current = set(), pk
        while nodes[current][0] is not None and current not in seen:
            seen.add(current)
            current = nodes[current][0]
        out[pk] = nodes[current][1]
    return out


def items_frame(*, study: RatingStudy) -> tuple[pd.DataFrame, set[int], set[int]]:
    """Every item of the study with its model, benchmark and category, but the attention
    checks (planted items with an obvious answer) and the calibration items (rated by every
    rater against a reference): no part of the agreement statistics; their ids come second
    and third. Two queries."""
    categories = item_categories(study=study)
    item_rows = (
        Item.objects.filter(study=study)
        .order_by("pk")
        .values_list(
            "pk",
            "external_id",
            "model_name",
            "benchmark",
            "taxonomy_node_id",
            "attention_check",
            "calibration_item",
        )
    )
    rows, checks, calibration = [], set(), set()
    for pk, ext, model, bench, node, check, calibrating in item_rows:
        if check is not None:
            checks.add(pk)
        elif calibrating is not None:
            calibration.add(pk)
        else:
            rows.append((pk, ext, model, bench or NO_BENCHMARK, categories.get(node, NO_CATEGORY)))
    frame = pd.DataFrame(rows, columns=["item", "external_id", "model", "benchmark", "category"])
    return frame, checks, calibration
