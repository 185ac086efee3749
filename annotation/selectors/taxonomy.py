"""What a node name means in a study's taxonomy version: the one rule for imports and demo data.

A name used by several nodes means the task before the subcategory before the category,
then the first in the version's node order.
"""

from __future__ import annotations

from annotation.models import RatingStudy
from delphi.models import TaxonomyNode

KIND_RANK = {
    TaxonomyNode.Kind.TASK: 0,
    TaxonomyNode.Kind.SUBCATEGORY: 1,
    TaxonomyNode.Kind.CATEGORY: 2,
}


def task_names_for(*, study: RatingStudy) -> dict[str, int] | None:
    """Node names of the study's taxonomy version -> node id; None without a version."""
    if study.taxonomy_version_id is None:
        return None
    best: dict[str, tuple[int, int, int]] = {}
    nodes = TaxonomyNode.objects.filter(version_id=study.taxonomy_version_id).values_list(
        "name", "kind", "id"
    )
    for order, (name, kind, node_id) in enumerate(nodes):
        candidate = (KIND_RANK[kind], order, node_id)
        best[name] = min(best.get(name, candidate), candidate)
    return {name: node_id for name, (_rank, _order, node_id) in best.items()}


def taxonomy_node_for(*, study: RatingStudy, name: str) -> TaxonomyNode | None:
    """The node of the study's taxonomy version that `name` means, or None."""
    if study.taxonomy_version_id is None or not name:
        return None
    nodes = TaxonomyNode.objects.filter(version_id=study.taxonomy_version_id, name=name)
    return min(nodes, key=lambda node: KIND_RANK[node.kind], default=None)
