"""Suggestions in words: the one wording of each kind of change, for the coordinator's triage,
the panelist's own list and the change log's from / to columns."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from delphi.suggestions.kinds import ADD, DELETE, MERGE, MOVE, RENAME, SuggestionLike

# Identity (UUID or its text, or None) -> the name of that item in the round, or None.
NameOf = Callable[[Any], str | None]


def describe_suggestion(
    suggestion: SuggestionLike, names: Mapping[str, str], *, mention_target: bool = True
) -> str:
    """A suggestion in a few words, e.g. "move 'Billing' under 'Care'"; `names` maps the
    identities (as text) of the round's items to their names. Without the target ("move
    under 'Care'") where the item is shown beside it."""

    def name(identity: Any) -> str:
        return repr(names.get(str(identity), "an item no longer in the round"))

    details = suggestion.details
    target = f" {name(suggestion.target_identity)}" if mention_target else ""
    if suggestion.kind == ADD:
        parent = details.get("parent_identity")
        where = f" under {name(parent)}" if parent else ""
        return f"add {details.get('kind', 'subcategory')} {details.get('name', '')!r}{where}"
    if suggestion.kind == RENAME:
        return f"rename{target} to {details.get('name', '')!r}"
    if suggestion.kind == MOVE:
        return f"move{target} under {name(details.get('parent_identity'))}"
    if suggestion.kind == MERGE:
        return f"merge{target} into {name(details.get('into_identity'))}"
    return f"delete{target}"


def suggestion_change(
    suggestion: SuggestionLike, *, name_of: NameOf, parent_of: Callable[[Any], Any]
) -> tuple[str, str]:
    """(from, to) of a suggestion in words, as the change log lists it; `parent_of` gives
    the identity of an item's parent in the round the suggestion was made in."""
    details = suggestion.details or {}
    target = suggestion.target_identity
    name = (name_of(target) or "") if target else ""
    if suggestion.kind == RENAME:
        return name, details.get("name", "")
    if suggestion.kind == MOVE:
        old = name_of(parent_of(target)) if target else None
        new = name_of(details.get("parent_identity"))
        return (f"under {old}" if old else "", f"under {new}" if new else "")
    if suggestion.kind == MERGE:
        into = name_of(details.get("into_identity"))
        return name, f"merged into {into}" if into else "merged"
    if suggestion.kind == DELETE:
        return name, "(deleted)"
    if suggestion.kind == ADD:
        parent = name_of(details.get("parent_identity"))
        return "", details.get("name", "") + (f" (under {parent})" if parent else "")
    return "", ""
