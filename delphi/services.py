"""Writes for taxonomies and Delphi studies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from delphi.models import TaxonomyNode, TaxonomyVersion

MEDHELM_TAXONOMY_FIXTURE = Path(settings.BASE_DIR) / "fixtures" / "medhelm_taxonomy.json"


class TaxonomyFormatError(ValueError):
    """A taxonomy file that does not have the expected shape; the message says where."""


def _require_name(entry: Any, where: str) -> str:
    name = (
        entry if isinstance(entry, str) else entry.get("name") if isinstance(entry, dict) else None
    )
    if not isinstance(name, str) or not name.strip():
        raise TaxonomyFormatError(f"{where}: needs a non-empty name")
    return name.strip()


@transaction.atomic
def create_taxonomy_version(
    *, tree: dict[str, Any], status: str = TaxonomyVersion.Status.DRAFT, source: str
) -> TaxonomyVersion:
    """Create a version from a nested dict: {name, description, categories: [{name,
    subcategories: [name | {name, description, tasks: [name | {name, description}]}]}]}."""
    version_name = _require_name(tree, "taxonomy")
    categories = tree.get("categories")
    if not isinstance(categories, list) or not categories:
        raise TaxonomyFormatError("taxonomy: 'categories' must be a non-empty list")
    version = TaxonomyVersion.objects.create(
        name=version_name,
        description=tree.get("description", ""),
        status=status,
        source=source,
        released_at=timezone.now() if status == TaxonomyVersion.Status.RELEASED else None,
    )
    for c_pos, category in enumerate(categories):
        c_where = f"categories[{c_pos}]"
        c_node = TaxonomyNode.objects.create(
            version=version,
            kind=TaxonomyNode.Kind.CATEGORY,
            position=c_pos,
            name=_require_name(category, c_where),
            description=category.get("description", "") if isinstance(category, dict) else "",
        )
        for s_pos, sub in enumerate(category.get("subcategories", [])):
            s_where = f"{c_where}.subcategories[{s_pos}]"
            s_node = TaxonomyNode.objects.create(
                version=version,
                kind=TaxonomyNode.Kind.SUBCATEGORY,
                parent=c_node,
                position=s_pos,
                name=_require_name(sub, s_where),
                description=sub.get("description", "") if isinstance(sub, dict) else "",
            )
            tasks = sub.get("tasks", []) if isinstance(sub, dict) else []
            for t_pos, task in enumerate(tasks):
                TaxonomyNode.objects.create(
                    version=version,
                    kind=TaxonomyNode.Kind.TASK,
                    parent=s_node,
                    position=t_pos,
                    name=_require_name(task, f"{s_where}.tasks[{t_pos}]"),
                    description=task.get("description", "") if isinstance(task, dict) else "",
                )
    return version


def ensure_medhelm_taxonomy() -> TaxonomyVersion:
    """The published MedHELM taxonomy, created from the shipped fixture on first use."""
    tree = json.loads(MEDHELM_TAXONOMY_FIXTURE.read_text(encoding="utf-8"))
    existing = TaxonomyVersion.objects.filter(name=tree["name"]).first()
    if existing is not None:
        return existing
    return create_taxonomy_version(
        tree=tree, status=TaxonomyVersion.Status.RELEASED, source=TaxonomyVersion.Source.FIXTURE
    )
