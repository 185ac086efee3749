"""What a node name means in a study's taxonomy version: the one rule for imports and demo data
(a name used by several nodes means the task before the subcategory before the category,
then the first in the version's node order); and the category and subcategory above each
node (the sampler's strata, the calibration page's groups).
"""

from __future__ import annotations

from annotation.models import Item, RatingStudy
from delphi.models import TaxonomyNode

NO_CATEGORY = "(no category)"
NO_SUBCATEGORY = "(no subcategory)"

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


def category_names(*, study: RatingStudy) -> dict[int, tuple[str, str]]:
    """Taxonomy node id -> (category name, subcategory name) for the nodes of the versions
    the study's items are filed in, walking up parents (a category's own items have no
    subcategory)."""
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
