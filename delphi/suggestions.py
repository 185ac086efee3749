"""What the panel's suggestions do to the taxonomy: the Delphi rules, with no Django import.

`apply_suggestions` turns the items of a round and the accepted suggestions into the plan of
the next round; `removed_identities` and `removed_ancestor` say what a delete or merge took
out (with everything under it); `check_suggestion` says whether a panelist's suggestion
makes sense; `describe_suggestion` words a suggestion for a coordinator.
A suggestion is anything with the attributes of `SuggestionLike` (a Suggestion row will do).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from delphi.errors import DelphiError

ADD, RENAME, MOVE, MERGE, DELETE = "add", "rename", "move", "merge", "delete"
ACCEPTED = "accepted"
# Fields each kind of suggestion takes in its details.
DETAIL_KEYS: dict[str, frozenset[str]] = {
    ADD: frozenset({"name", "kind", "parent_identity", "description"}),
    RENAME: frozenset({"name"}),
    MOVE: frozenset({"parent_identity"}),
    MERGE: frozenset({"into_identity"}),
    DELETE: frozenset(),
}


class RoundLike(Protocol):
    number: int


class SuggestionLike(Protocol):
    """What the rules read of a suggestion."""

    kind: str
    status: str
    target_identity: uuid.UUID | None
    details: Mapping[str, Any]
    triage_reason: str
    round: RoundLike


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


# --------------------------------------------------------------------------- checking


class ItemLike(Protocol):
    identity: uuid.UUID
    kind: str


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


# --------------------------------------------------------------------------- removed items


@dataclass(frozen=True)
class Removal:
    """Why an identity left the taxonomy: an accepted delete or merge suggestion."""

    how: str  # "deleted" | "merged"
    reason: str  # the coordinator's triage reason
    round_number: int  # the round the suggestion was made in
    into_identity: str | None = None  # for a merge, the item it merged into

    @property
    def summary(self) -> str:
        """Short form, as the released taxonomy lists what it left out: "deleted: why"."""
        return f"{self.how}: {self.reason}"

    def explain(self, *, into_name: str | None = None) -> str:
        """Long form, as the item table states it: "merged into 'X' after round 1: why"."""
        into = f" into {into_name!r}" if self.how == "merged" and into_name else ""
        return f"{self.how}{into} after round {self.round_number}: {self.reason}"


def removed_identities(suggestions: Iterable[SuggestionLike]) -> dict[str, Removal]:
    """Identities an accepted delete or merge took out, with how and why (the last
    suggestion about an identity wins; pass them in the order they were made)."""
    removed: dict[str, Removal] = {}
    for suggestion in suggestions:
        if suggestion.status != ACCEPTED or suggestion.kind not in (DELETE, MERGE):
            continue
        removed[str(suggestion.target_identity)] = Removal(
            how="deleted" if suggestion.kind == DELETE else "merged",
            reason=suggestion.triage_reason,
            round_number=suggestion.round.number,
            into_identity=suggestion.details.get("into_identity")
            if suggestion.kind == MERGE
            else None,
        )
    return removed


def removed_ancestor(
    identity: str, removed: Collection[str], parent_of: Mapping[str, str | None]
) -> str | None:
    """The nearest parent, grandparent... of `identity` that was removed: what is under a
    removed item goes with it. `parent_of` maps an identity to its parent's (or None)."""
    seen: set[str] = set()
    parent = parent_of.get(identity)
    while parent is not None and parent not in seen:
        if parent in removed:
            return parent
        seen.add(parent)
        parent = parent_of.get(parent)
    return None


def removed_with_branches(
    removed: Collection[str], parent_of: Mapping[str, str | None]
) -> set[str]:
    """The removed identities and every identity under one of them."""
    below = {key for key in parent_of if removed_ancestor(key, removed, parent_of) is not None}
    return set(removed) | below


# --------------------------------------------------------------------------- wording


def describe_suggestion(suggestion: SuggestionLike, names: Mapping[str, str]) -> str:
    """A suggestion in a few words, e.g. "move 'Billing' under 'Care'"; `names` maps the
    identities of the round's items to their names."""

    def name(identity: Any) -> str:
        return repr(names.get(str(identity), "an item no longer in the round"))

    details = suggestion.details
    target = name(suggestion.target_identity)
    if suggestion.kind == ADD:
        parent = details.get("parent_identity")
        where = f" under {name(parent)}" if parent else ""
        return f"add {details.get('kind', 'subcategory')} {details.get('name', '')!r}{where}"
    if suggestion.kind == RENAME:
        return f"rename {target} to {details.get('name', '')!r}"
    if suggestion.kind == MOVE:
        return f"move {target} under {name(details.get('parent_identity'))}"
    if suggestion.kind == MERGE:
        return f"merge {target} into {name(details.get('into_identity'))}"
    return f"delete {target}"
