"""Writes for taxonomies and Delphi studies."""

from __future__ import annotations

import csv
import functools
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from delphi.errors import DelphiError
from delphi.models import TaxonomyNode, TaxonomyVersion
from medhelm_site.common.text_limits import checked_column_text

MEDHELM_TAXONOMY_FIXTURE = Path(settings.BASE_DIR) / "fixtures" / "medhelm_taxonomy.json"
# HELM's MedHELM benchmarks -> MedHELM category, from crfm-helm's schema_medhelm.yaml
# (scripts/medhelm_benchmark_map.py wrote it; its "source" names the file and its hash).
MEDHELM_BENCHMARKS_FIXTURE = Path(settings.BASE_DIR) / "fixtures" / "medhelm_benchmarks.json"


class TaxonomyFormatError(DelphiError):
    """A taxonomy file that does not have the expected shape; the message says where."""


def _require_name(entry: Any, where: str) -> str:
    name = (
        entry if isinstance(entry, str) else entry.get("name") if isinstance(entry, dict) else None
    )
    if not isinstance(name, str) or not name.strip():
        raise TaxonomyFormatError(f"{where}: needs a non-empty name", field="taxonomy")
    return _column_text(name.strip(), model=TaxonomyNode, column="name", where=f"{where}.name")


def _column_text(value: Any, *, model: Any, column: str, where: str) -> str:
    return checked_column_text(
        value, model=model, column=column, error=TaxonomyFormatError, field="taxonomy", where=where
    )


def _description(entry: Any, where: str) -> str:
    raw = entry.get("description") if isinstance(entry, dict) else None
    return _column_text(
        "" if raw is None else raw,
        model=TaxonomyNode,
        column="description",
        where=f"{where}.description",
    )


def _entries(entry: Any, key: str, where: str) -> list[Any]:
    """The children listed under `key` of a category or subcategory (none for a bare name)."""
    children = entry.get(key, []) if isinstance(entry, dict) else []
    if not isinstance(children, list):
        raise TaxonomyFormatError(f"{where}.{key}: must be a list", field="taxonomy")
    return children


# The key under which each level lists its children, from the top down.
CHILD_KEYS = ("subcategories", "tasks")


def _checked_node(entry: Any, where: str, child_keys: tuple[str, ...]) -> dict[str, Any]:
    """One entry (a bare name or {name, description, <children>}) and the levels below it."""
    node: dict[str, Any] = {
        "name": _require_name(entry, where),
        "description": _description(entry, where),
    }
    if child_keys:
        key = child_keys[0]
        node[key] = [
            _checked_node(child, f"{where}.{key}[{pos}]", child_keys[1:])
            for pos, child in enumerate(_entries(entry, key, where))
        ]
    return node


def checked_taxonomy_tree(tree: Any) -> dict[str, Any]:
    """The nested dict of `create_taxonomy_version` checked and normalised (names stripped,
    every entry a {name, description, <children>} dict), without writing anything:
    TaxonomyFormatError naming the place (e.g. "categories[0].subcategories[1].name") when
    a name is empty or longer than its column, a text holds a character no column stores,
    or the shape is wrong. Forms call it to show the problem beside the uploaded file."""
    if not isinstance(tree, dict):
        raise TaxonomyFormatError("taxonomy: must be an object", field="taxonomy")
    name = tree.get("name")
    if not isinstance(name, str) or not name.strip():
        raise TaxonomyFormatError("taxonomy: needs a non-empty name", field="taxonomy")
    categories = tree.get("categories")
    if not isinstance(categories, list) or not categories:
        raise TaxonomyFormatError(
            "taxonomy: 'categories' must be a non-empty list", field="taxonomy"
        )
    return {
        "name": _column_text(
            name.strip(), model=TaxonomyVersion, column="name", where="taxonomy.name"
        ),
        "description": _column_text(
            tree.get("description") or "",
            model=TaxonomyVersion,
            column="description",
            where="taxonomy.description",
        ),
        "categories": [
            _checked_node(category, f"categories[{pos}]", CHILD_KEYS)
            for pos, category in enumerate(categories)
        ],
    }


@transaction.atomic
def create_taxonomy_version(
    *, tree: dict[str, Any], status: str = TaxonomyVersion.Status.DRAFT, source: str
) -> TaxonomyVersion:
    """Create a version from a nested dict: {name, description, categories: [{name,
    subcategories: [name | {name, description, tasks: [name | {name, description}]}]}]}.
    The whole tree is checked (`checked_taxonomy_tree`) before anything is written."""
    tree = checked_taxonomy_tree(tree)
    # Checked here so that an import under a taken name says so instead of failing on the
    # unique constraint.
    if TaxonomyVersion.objects.filter(name=tree["name"]).exists():
        raise TaxonomyFormatError(
            f"taxonomy: a version named {tree['name']!r} exists already; choose another name"
        )
    version = TaxonomyVersion.objects.create(
        name=tree["name"],
        description=tree["description"],
        status=status,
        source=source,
        released_at=timezone.now() if status == TaxonomyVersion.Status.RELEASED else None,
    )
    for c_pos, category in enumerate(tree["categories"]):
        c_node = TaxonomyNode.objects.create(
            version=version,
            kind=TaxonomyNode.Kind.CATEGORY,
            position=c_pos,
            name=category["name"],
            description=category["description"],
        )
        for s_pos, sub in enumerate(category["subcategories"]):
            s_node = TaxonomyNode.objects.create(
                version=version,
                kind=TaxonomyNode.Kind.SUBCATEGORY,
                parent=c_node,
                position=s_pos,
                name=sub["name"],
                description=sub["description"],
            )
            for t_pos, task in enumerate(sub["tasks"]):
                TaxonomyNode.objects.create(
                    version=version,
                    kind=TaxonomyNode.Kind.TASK,
                    parent=s_node,
                    position=t_pos,
                    name=task["name"],
                    description=task["description"],
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


@functools.cache
def medhelm_benchmark_nodes() -> dict[str, str]:
    """HELM benchmark name -> the MedHELM taxonomy node HELM's schema files it under (a
    category: schema_medhelm.yaml goes no deeper), as shipped in MEDHELM_BENCHMARKS_FIXTURE."""
    data = json.loads(MEDHELM_BENCHMARKS_FIXTURE.read_text(encoding="utf-8"))
    return dict(data["benchmarks"])


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
        except RecursionError:
            # The decoder recurses once per nested array or object; a taxonomy has four levels.
            raise TaxonomyFormatError(
                f"{filename}: the JSON is nested too deeply to be a taxonomy "
                "(categories > subcategories > tasks)"
            ) from None
        if not isinstance(tree, dict):
            raise TaxonomyFormatError(f"{filename}: the top level must be a JSON object")
        if name:
            tree["name"] = name
        return tree
    if filename.lower().endswith(".csv"):
        return _tree_from_csv(filename=filename, text=text, name=name)
    raise TaxonomyFormatError(f"{filename}: give a .json or .csv file")


def _csv_rows(reader: csv.DictReader, *, filename: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """The rows with the line each starts on; a line the csv module cannot read (a cell over
    its field size limit) is a TaxonomyFormatError naming the line."""
    line = reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise TaxonomyFormatError(f"{filename}, line {line}: {exc}") from None
        yield line, row
        line = reader.line_num + 1


def _tree_from_csv(*, filename: str, text: str, name: str) -> dict[str, Any]:
    reader = csv.DictReader(io.StringIO(text))
    try:
        fieldnames = reader.fieldnames or []
    except csv.Error as exc:
        raise TaxonomyFormatError(f"{filename}, line 1: {exc}") from None
    header = [column.strip().lower() for column in fieldnames]
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
    for line, raw in _csv_rows(reader, filename=filename):
        row = {key.strip().lower(): (value or "").strip() for key, value in raw.items() if key}
        for column, value in row.items():
            _column_text(
                value,
                model=TaxonomyNode,
                column="description" if column == "description" else "name",
                where=f"{filename}, line {line}, column {column}",
            )
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
