"""What accepted delete and merge suggestions took out of the taxonomy, and what went with it
(everything under a removed item)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from delphi.suggestions.kinds import ACCEPTED, DELETE, MERGE, SuggestionLike


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
