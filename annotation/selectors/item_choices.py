"""The item list a coordinator chooses from when marking an item (the calibration page, the
attention-checks page): the items the marking service would accept, grouped by "category /
subcategory", each named by its case (external id), model and benchmark, narrowed by a
search. Coordinators see models; raters never read this.

The list is a convenience, not the check: the services still refuse an item posted from
outside it, with an error naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from django.db.models import Q, QuerySet

from annotation.models import Item, RatingStudy
from annotation.selectors.taxonomy import NO_CATEGORY, NO_SUBCATEGORY, category_names

#: The most items a page's item list offers at once; a search narrows it.
CHOICES_SHOWN = 300


@dataclass(frozen=True)
class ItemChoices:
    """A page's item list: (group, [(item id, label)]) sorted by group, how many items it
    shows, how many can be marked and match the search, and the search."""

    groups: list[tuple[str, list[tuple[int, str]]]]
    shown: int
    matching: int
    query: str


def item_choices(
    *,
    study: RatingStudy,
    items: QuerySet[Item],
    query: str = "",
    include: int | None = None,
    marked: Mapping[int, str] | None = None,
) -> ItemChoices:
    """The first CHOICES_SHOWN of `items` matching `query` (in the external id, model,
    benchmark or a taxonomy name), grouped and labelled. `include`: an item asked for by
    number (the item page's link), listed whatever the search, if the study has it.
    `marked`: item id -> what it already is ("calibration item"), said in its label."""
    marked = marked or {}
    query = query.strip()
    if query:
        items = items.filter(
            Q(external_id__icontains=query)
            | Q(model_name__icontains=query)
            | Q(benchmark__icontains=query)
            | Q(taxonomy_node__name__icontains=query)
            | Q(taxonomy_node__parent__name__icontains=query)
            | Q(taxonomy_node__parent__parent__name__icontains=query)
        )
    matching = items.count()
    fields = ("pk", "external_id", "model_name", "benchmark", "taxonomy_node_id")
    rows = list(
        items.order_by("taxonomy_node_id", "external_id", "model_name", "pk").values_list(*fields)[
            :CHOICES_SHOWN
        ]
    )
    if include is not None and include not in {r[0] for r in rows}:
        rows += list(Item.objects.filter(study=study, pk=include).values_list(*fields))
    names = category_names(study=study)
    groups: dict[str, list[tuple[int, str]]] = {}
    for pk, external_id, model, benchmark, node in rows:
        group = " / ".join(names.get(node, (NO_CATEGORY, NO_SUBCATEGORY)))
        label = " · ".join(part for part in (external_id, model, benchmark) if part)
        label += f" (#{pk}{', ' + marked[pk] if pk in marked else ''})"
        groups.setdefault(group, []).append((pk, label))
    return ItemChoices(
        groups=sorted(groups.items()), shown=len(rows), matching=matching, query=query
    )
