"""The Delphi rules the exports apply that other parts of the app also apply.

Each is here once, so it can be pointed at the Django-free core (delphi/suggestions.py,
delphi/stats.py) in one edit: which identities an accepted suggestion removed (and that a
removed item takes its branch with it), how a suggestion reads as a change from / to, and
the colours of the rating bands and outcomes.
"""

from __future__ import annotations

from collections.abc import Mapping

from delphi import stats
from delphi.exports.data import StudyData
from delphi.models import RoundItem, Suggestion

OUTCOME_ORDER = ("consensus_in", "no_consensus", "consensus_out", "too_few_ratings")
OUTCOME_COLOURS = {
    "consensus_in": "#2e7d32",
    "no_consensus": "#9e9e9e",
    "consensus_out": "#c62828",
    "too_few_ratings": "#ffb74d",
}
BAND_COLOURS = {
    **dict.fromkeys(stats.LOW_BAND, "#c62828"),
    **dict.fromkeys(stats.MID_BAND, "#9e9e9e"),
    **dict.fromkeys(stats.HIGH_BAND, "#2e7d32"),
}


def removed_by_suggestion(data: StudyData) -> dict[str, str]:
    """Identities an accepted delete or merge took out, with how and why (the in-memory twin
    of services.removed_identities)."""
    removed: dict[str, str] = {}
    for suggestion in data.suggestions:
        if suggestion.status != Suggestion.Status.ACCEPTED:
            continue
        number = suggestion.round.number
        target = str(suggestion.target_identity)
        if suggestion.kind == Suggestion.Kind.DELETE:
            removed[target] = f"deleted after round {number}: {suggestion.triage_reason}"
        elif suggestion.kind == Suggestion.Kind.MERGE:
            into = data.item_at.get((number, suggestion.details.get("into_identity", "")))
            into_name = f" into {into.name!r}" if into else ""
            removed[target] = f"merged{into_name} after round {number}: {suggestion.triage_reason}"
    return removed


def removed_ancestor(
    item: RoundItem, removed: Mapping[str, str], latest_of: Mapping[str, RoundItem]
) -> str | None:
    """The nearest parent, grandparent... a delete or merge removed: what is under a removed
    item goes with it (services.start_next_round drops the whole branch)."""
    seen: set[str] = set()
    parent = item.parent_identity
    while parent is not None and str(parent) not in seen:
        key = str(parent)
        if key in removed:
            return key
        seen.add(key)
        above = latest_of.get(key)
        parent = above.parent_identity if above else None
    return None


def suggestion_change(data: StudyData, suggestion: Suggestion) -> tuple[str, str]:
    """(from, to) of a suggestion in words: the wording of every kind of change."""
    number = suggestion.round.number
    details = suggestion.details or {}
    key = str(suggestion.target_identity) if suggestion.target_identity else ""
    target = data.item_at.get((number, key))
    name = target.name if target else ""
    kind = suggestion.kind
    if kind == Suggestion.Kind.RENAME:
        return name, details.get("name", "")
    if kind == Suggestion.Kind.MOVE:
        old = data.item_at.get((number, str(target.parent_identity))) if target else None
        new = data.item_at.get((number, details.get("parent_identity", "")))
        return (f"under {old.name}" if old else "", f"under {new.name}" if new else "")
    if kind == Suggestion.Kind.MERGE:
        into = data.item_at.get((number, details.get("into_identity", "")))
        return name, f"merged into {into.name}" if into else "merged"
    if kind == Suggestion.Kind.DELETE:
        return name, "(deleted)"
    if kind == Suggestion.Kind.ADD:
        parent = data.item_at.get((number, details.get("parent_identity", "")))
        return "", details.get("name", "") + (f" (under {parent.name})" if parent else "")
    return "", ""


__all__ = [
    "BAND_COLOURS",
    "OUTCOME_COLOURS",
    "OUTCOME_ORDER",
    "removed_ancestor",
    "removed_by_suggestion",
    "suggestion_change",
]
