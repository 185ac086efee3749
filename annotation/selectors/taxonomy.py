"""What a node name means in a study's taxonomy version: the one rule for imports and demo data
(a name used by several nodes means the task before the subcategory before the category,
then the first in the version's node order); the category and subcategory above each node;
and where a study's items are filed (the import page's summary).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count

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


NOT_FILED = "(not filed under the taxonomy)"


@dataclass(frozen=True)
class FilingRow:
    category: str
    subcategory: str
    per_model: list[int]  # in the order of Filing.models
    total: int


@dataclass(frozen=True)
class Filing:
    """Where a study's items are filed: items per (category, subcategory) and model, so a
    coordinator sees after an import whether the file's tasks landed where they meant."""

    models: list[str]
    rows: list[FilingRow]
    n_items: int
    n_not_filed: int


def filing_summary(*, study: RatingStudy) -> Filing:
    """The study's items counted by category, subcategory and model (one grouped query);
    items filed under no taxonomy node come last, as NOT_FILED."""
    names = category_names(study=study)
    counts: dict[tuple[str, str], dict[str, int]] = {}
    not_filed = 0
    grouped = (
        Item.objects.filter(study=study)
        .values_list("taxonomy_node_id", "model_name")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for node, model, n in grouped:
        if node is None:
            key = (NOT_FILED, "")
            not_filed += n
        else:
            key = names.get(node, (NO_CATEGORY, NO_SUBCATEGORY))
        row = counts.setdefault(key, {})
        row[model] = row.get(model, 0) + n
    models = sorted({m for row in counts.values() for m in row})
    order = sorted(counts, key=lambda key: (key[0] == NOT_FILED, key))
    rows = [
        FilingRow(
            category=category,
            subcategory=subcategory,
            per_model=[counts[(category, subcategory)].get(m, 0) for m in models],
            total=sum(counts[(category, subcategory)].values()),
        )
        for category, subcategory in order
    ]
    return Filing(
        models=models, rows=rows, n_items=sum(r.total for r in rows), n_not_filed=not_filed
    )
