"""Writes for taxonomies and Delphi studies."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from delphi.errors import DelphiError
from delphi.models import TaxonomyNode, TaxonomyVersion

MEDHELM_TAXONOMY_FIXTURE = Path(settings.BASE_DIR) / "fixtures" / "medhelm_taxonomy.json"


class TaxonomyFormatError(DelphiError):
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
    # Checked here so that an import under a taken name says so instead of failing on the
    # unique constraint.
    if TaxonomyVersion.objects.filter(name=version_name).exists():
        raise TaxonomyFormatError(
            f"taxonomy: a version named {version_name!r} exists already; choose another name"
        )
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


CSV_COLUMNS = ("category", "subcategory", "task", "description")


def parse_taxonomy_file(*, filename: str, content: bytes, name: str = "") -> dict[str, Any]:
    """A JSON or CSV taxonomy file as the nested dict of `create_taxonomy_version`.

    JSON: that nested dict. CSV: a header with category, subcategory and task (task and
    description optional), one row per leaf; a row with an empty subcategory adds only the
    category, an empty task only the subcategory. `name` overrides the file's own name.
    Errors name the file, the line and the column.
    """
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TaxonomyFormatError(
            f"{filename}: not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    if filename.lower().endswith(".json"):
        try:
            tree = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TaxonomyFormatError(
                f"{filename}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
        if not isinstance(tree, dict):
            raise TaxonomyFormatError(f"{filename}: the top level must be a JSON object")
        if name:
            tree["name"] = name
        return tree
    if filename.lower().endswith(".csv"):
        return _tree_from_csv(filename=filename, text=text, name=name)
    raise TaxonomyFormatError(f"{filename}: give a .json or .csv file")


def _tree_from_csv(*, filename: str, text: str, name: str) -> dict[str, Any]:
    reader = csv.DictReader(io.StringIO(text))
    header = [column.strip().lower() for column in reader.fieldnames or []]
    missing = [column for column in ("category", "subcategory") if column not in header]
    if missing:
        raise TaxonomyFormatError(
            f"{filename}: the header needs the column(s) {missing}; found {header}"
        )
    unknown = [column for column in header if column not in CSV_COLUMNS]
    if unknown:
        raise TaxonomyFormatError(
            f"{filename}: unknown column(s) {unknown}; allowed: {list(CSV_COLUMNS)}"
        )
    categories: dict[str, dict[str, Any]] = {}
    for line, raw in enumerate(reader, start=2):
        row = {key.strip().lower(): (value or "").strip() for key, value in raw.items() if key}
        category, sub, task = (
            row.get("category", ""),
            row.get("subcategory", ""),
            row.get("task", ""),
        )
        if not category:
            raise TaxonomyFormatError(f"{filename}, line {line}, column category: empty")
        if task and not sub:
            raise TaxonomyFormatError(
                f"{filename}, line {line}, column subcategory: a task needs its subcategory"
            )
        c_entry = categories.setdefault(category, {"name": category, "subcategories": {}})
        if not sub:
            continue
        s_entry = c_entry["subcategories"].setdefault(sub, {"name": sub, "tasks": []})
        if task:
            s_entry["tasks"].append({"name": task, "description": row.get("description", "")})
    if not categories:
        raise TaxonomyFormatError(f"{filename}: no rows")
    return {
        "name": name or Path(filename).stem,
        "categories": [
            {"name": c["name"], "subcategories": list(c["subcategories"].values())}
            for c in categories.values()
        ],
    }


def version_tree(version: TaxonomyVersion) -> dict[str, Any]:
    """A version as a nested dict with each node's identity: what a protocol locks."""
    nodes = list(version.nodes.order_by("position", "id"))
    children: dict[int | None, list[TaxonomyNode]] = {}
    for node in nodes:
        children.setdefault(node.parent_id, []).append(node)

    def entry(node: TaxonomyNode) -> dict[str, Any]:
        data: dict[str, Any] = {
            "identity": str(node.identity),
            "kind": node.kind,
            "name": node.name,
            "description": node.description,
        }
        kids = children.get(node.pk, [])
        if kids:
            data["children"] = [entry(kid) for kid in kids]
        return data

    return {
        "name": version.name,
        "id": version.pk,
        "nodes": [entry(node) for node in children.get(None, [])],
    }
