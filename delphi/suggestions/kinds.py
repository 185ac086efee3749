"""The kinds of suggestion, the details each takes, and what the rules read of a suggestion
and of an item (a Suggestion or RoundItem row will do)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Protocol

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


class ItemLike(Protocol):
    identity: uuid.UUID
    kind: str
