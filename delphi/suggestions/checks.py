"""Whether a panelist's suggestion makes sense for the round it is made in."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from delphi.errors import DelphiError
from delphi.suggestions.kinds import ADD, DETAIL_KEYS, MERGE, MOVE, RENAME, ItemLike

# The kind of parent an added or moved item needs, by its own kind.
PARENT_KIND = {"subcategory": "category", "task": "subcategory"}


@dataclass(frozen=True)
class CheckedSuggestion:
    """A suggestion fit to store: details stripped to text, the rationale stripped."""

    kind: str
    target_identity: uuid.UUID | None
    details: dict[str, str]
    text: str


def check_suggestion(
    *,
    kind: str,
    text: str,
    target_identity: str | uuid.UUID | None,
    details: Mapping[str, Any],
    items: Mapping[str, ItemLike],
) -> CheckedSuggestion:
    """A panelist's suggestion about the round whose items are `items` (by identity), checked;
    DelphiError naming the field at fault otherwise. Empty details count as not given."""
    if kind not in DETAIL_KEYS:
        raise DelphiError(
            f"suggestion kind must be one of {list(DETAIL_KEYS)}, got {kind!r}", field="kind"
        )
    given = {key: value for key, value in details.items() if value not in ("", None)}
    unknown = set(given) - DETAIL_KEYS[kind]
    if unknown:
        raise DelphiError(f"a {kind} suggestion does not take {sorted(unknown)}", field="details")
    target = None
    if kind != ADD:
        target = items.get(str(target_identity or ""))
        if target is None:
            raise DelphiError(
                f"a {kind} suggestion needs the item it is about", field="target_identity"
            )
    if kind == ADD:
        given["kind"] = _checked_addition(given, items)
    elif kind == RENAME and not str(given.get("name", "")).strip():
        raise DelphiError("rename suggestion: give the new name", field="name")
    elif kind == MOVE:
        assert target is not None
        if target.kind == "category":
            raise DelphiError(
                "move suggestion: a category has no parent to move from", field="target_identity"
            )
        _check_parent(MOVE, given, items, PARENT_KIND[target.kind])
    elif kind == MERGE:
        assert target is not None
        into = items.get(str(given.get("into_identity", "")))
        if into is None or into.kind != target.kind or into.identity == target.identity:
            raise DelphiError(
                "merge suggestion: into_identity must be another item of the same kind",
                field="into_identity",
            )
    if not text.strip():
        raise DelphiError("say why: a suggestion needs its rationale", field="text")
    return CheckedSuggestion(
        kind=kind,
        target_identity=target.identity if target else None,
        details={key: str(value).strip() for key, value in given.items()},
        text=text.strip(),
    )


def _checked_addition(details: Mapping[str, Any], items: Mapping[str, ItemLike]) -> str:
    """The kind of the item to add, after checking its name and parent."""
    if not str(details.get("name", "")).strip():
        raise DelphiError("add suggestion: give the new item's name", field="name")
    new_kind = details.get("kind", "subcategory")
    if new_kind not in ("category", "subcategory", "task"):
        raise DelphiError(
            f"add suggestion: kind must be category, subcategory or task, got {new_kind!r}",
            field="kind",
        )
    if new_kind in PARENT_KIND:
        _check_parent(ADD, details, items, PARENT_KIND[new_kind])
    elif "parent_identity" in details:
        raise DelphiError("add suggestion: a category has no parent", field="parent_identity")
    return new_kind


def _check_parent(
    kind: str, details: Mapping[str, Any], items: Mapping[str, ItemLike], parent_kind: str
) -> None:
    parent = items.get(str(details.get("parent_identity", "")))
    if parent is None or parent.kind != parent_kind:
        raise DelphiError(
            f"{kind} suggestion: parent_identity must be a {parent_kind}", field="parent_identity"
        )
