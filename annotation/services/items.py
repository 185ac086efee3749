"""Writes for a study's items: saving imported rows, and the taxonomy node an item is filed
under."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation import audit
from annotation.models import Item, RatingStudy
from medhelm_site.common.querying import ID_FILTER_LIMIT


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
    rows = list(rows)
    items = Item.objects.filter(study=study)
    external_ids = {row.external_id for row in rows}
    if len(external_ids) <= ID_FILTER_LIMIT:  # a small batch need not read the whole study
        items = items.filter(external_id__in=external_ids)
    # Unordered: ordered by id, SQLite scans the whole study rather than the unique index
    # (see annotation.imports.job_state.item_keys).
    existing = set(items.values_list("external_id", "model_name").order_by())
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
