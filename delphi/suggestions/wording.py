"""Suggestions in words, as a coordinator reads them when triaging."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from delphi.suggestions.kinds import ADD, MERGE, MOVE, RENAME, SuggestionLike


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
