"""The plan of the next round: a round's items with its accepted suggestions applied."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from delphi.suggestions.kinds import ACCEPTED, ADD, DELETE, MERGE, MOVE, RENAME, SuggestionLike
from delphi.suggestions.removals import removed_with_branches


@dataclass(frozen=True)
class Item:
    """One item of a round, as the next round starts from it."""

    identity: uuid.UUID
    kind: str
    parent_identity: uuid.UUID | None
    name: str
    description: str
    item_version: int


@dataclass(frozen=True)
class PlannedItem(Item):
    """An item of the next round: `item_version` is already the new one, `change_note` says
    what changed and why, `changed` whether an accepted suggestion touched it."""

    change_note: str = ""
    changed: bool = False


@dataclass(frozen=True)
class Plan:
    """The next round before carry-over: its items in order (removed ones left out), the
    identities removed and the identities added."""

    items: tuple[PlannedItem, ...]
    removed: frozenset[str]
    added: tuple[str, ...]

    def to_rate(self, *, resolved: Collection[str], keep_resolved: bool) -> list[PlannedItem]:
        """The items the panel rates next: an item resolved last round (consensus in or out)
        comes back only when the policy re-rates everything or a suggestion changed it."""
        return [
            item
            for item in self.items
            if keep_resolved or item.changed or str(item.identity) not in resolved
        ]


@dataclass
class _Draft:
    item: Item
    notes: list[str] = field(default_factory=list)
    changed: bool = False
    added: bool = False

    def change(self, note: str, **fields: Any) -> None:
        self.notes.append(note)
        self.item = replace(self.item, **fields)
        self.changed = True


def apply_suggestions(
    items: Sequence[Item],
    suggestions: Iterable[SuggestionLike],
    *,
    new_identity: Callable[[], uuid.UUID] = uuid.uuid4,
) -> Plan:
    """Apply accepted suggestions, in the order given, to a round's items (in their order).

    A rename or move changes the item (a new item version); a merge removes its target and
    moves the target's children under the item it merged into; a delete removes its target;
    what is under a removed item goes with it. Added items sit right after their parent (at
    the end for a new category); suggestions about an item not in the round are skipped.
    """
    drafts = {str(item.identity): _Draft(item) for item in items}
    order = list(drafts)
    removed: set[str] = set()
    for suggestion in suggestions:
        if suggestion.status != ACCEPTED:
            continue
        if suggestion.kind == ADD:
            draft = _added(suggestion, new_identity())
            drafts[str(draft.item.identity)] = draft
            continue
        target = drafts.get(str(suggestion.target_identity)) if suggestion.target_identity else None
        if target is not None:
            removed |= _apply(suggestion, target, drafts)
    parent_of = {key: _key(draft.item.parent_identity) for key, draft in drafts.items()}
    removed = removed_with_branches(removed, parent_of)
    added = [key for key, draft in drafts.items() if draft.added]
    planned = [
        _planned(drafts[key]) for key in _sequence(order, added, parent_of) if key not in removed
    ]
    return Plan(items=tuple(planned), removed=frozenset(removed), added=tuple(added))


def _added(suggestion: SuggestionLike, identity: uuid.UUID) -> _Draft:
    details = suggestion.details
    parent = details.get("parent_identity")
    item = Item(
        identity=identity,
        kind=details.get("kind", "subcategory"),
        parent_identity=uuid.UUID(parent) if parent else None,
        name=details["name"],
        description=details.get("description", ""),
        item_version=1,
    )
    note = f"Added at a panelist's suggestion ({suggestion.triage_reason})"
    return _Draft(item, notes=[note], changed=True, added=True)


def _apply(suggestion: SuggestionLike, target: _Draft, drafts: Mapping[str, _Draft]) -> set[str]:
    """Apply one suggestion about an existing item; returns the identities it removes."""
    details, why = suggestion.details, suggestion.triage_reason
    name = target.item.name
    if suggestion.kind == RENAME:
        target.change(f"Renamed from {name!r} ({why})", name=details["name"])
    elif suggestion.kind == MOVE:
        old = drafts.get(str(target.item.parent_identity))
        new = drafts.get(details["parent_identity"])
        old_name = old.item.name if old else "?"
        new_name = new.item.name if new else "?"
        target.change(
            f"Moved from {old_name!r} to {new_name!r} ({why})",
            parent_identity=uuid.UUID(details["parent_identity"]),
        )
    elif suggestion.kind == MERGE:
        into = drafts.get(details["into_identity"])
        if into is not None:
            _merge(target, into, drafts.values(), why)
        return {str(target.item.identity)}
    elif suggestion.kind == DELETE:
        return {str(target.item.identity)}
    return set()


def _merge(target: _Draft, into: _Draft, drafts: Iterable[_Draft], why: str) -> None:
    # The merged item's children follow it into the item it merged into: a new parent is a
    # new question for them, as with a move.
    into.notes.append(f"Merged with {target.item.name!r} ({why})")
    into.changed = True
    for draft in drafts:
        if draft.item.parent_identity == target.item.identity:
            draft.change(
                f"moved under {into.item.name!r} as {target.item.name!r} merged into it ({why})",
                parent_identity=into.item.identity,
            )


def _sequence(order: list[str], added: list[str], parent_of: Mapping[str, str | None]) -> list[str]:
    sequence: list[str] = []
    for key in order:
        sequence.append(key)
        sequence.extend(a for a in added if parent_of[a] == key)
    sequence.extend(a for a in added if a not in sequence)
    return sequence


def _planned(draft: _Draft) -> PlannedItem:
    bump = draft.changed and not draft.added
    return PlannedItem(
        identity=draft.item.identity,
        kind=draft.item.kind,
        parent_identity=draft.item.parent_identity,
        name=draft.item.name,
        description=draft.item.description,
        item_version=draft.item.item_version + 1 if bump else draft.item.item_version,
        change_note="; ".join(draft.notes),
        changed=draft.changed,
    )


def _key(identity: uuid.UUID | str | None) -> str | None:
    return None if identity is None else str(identity)
