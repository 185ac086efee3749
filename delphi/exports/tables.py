"""The tables of a Delphi study's exports that follow the items: items.csv (each identity
through the rounds, with its final status) and changes.csv (every change with its reason).

Each builder reads one `StudyData` and queries nothing. Numbers are left as numbers; the
registry writes them to CSV. The tables of panelists and answers are in `answer_tables`.
"""

from __future__ import annotations

from typing import Any

from delphi import suggestions
from delphi.exports.data import StudyData
from delphi.models import RoundItem, Suggestion

ITEM_ROUND_FIELDS = ("name", "version", "outcome", "median", "iqr", "pct_7_9", "pct_1_3", "n_rated")
CHANGE_COLUMNS = [
    "round",
    "decision",
    "applies_from_round",
    "identity",
    "item",
    "kind",
    "from",
    "to",
    "reason",
    "panelist_rationale",
    "source",
]


# --------------------------------------------------------------------------- items


def item_columns(data: StudyData) -> list[str]:
    columns = ["identity", "kind", "first_round", "last_round"]
    for round_ in data.rounds:
        columns += [f"r{round_.number}_{name}" for name in ITEM_ROUND_FIELDS]
    return [*columns, "status_path", "final_status", "final_reason", "in_released_taxonomy"]


def item_rows(data: StudyData) -> list[dict[str, Any]]:
    """One row per identity: its wording, version, outcome and headline statistics in every
    round it was put to the panel, the path of its outcomes ("no_consensus > consensus_in";
    "pending" for a round not analysed yet) and its final status (the latest outcome, or
    "removed" by an accepted delete / merge suggestion, or with its removed parent)."""
    removed = _removed_by_suggestion(data)
    released = {str(node.identity) for node in data.released_nodes}
    latest_of = {str(item.identity): item for item in data.items}  # the last round wins
    rows = []
    for identity in data.identities_in_order():
        appearances = [
            data.item_at[(r.number, identity)]
            for r in data.rounds
            if (r.number, identity) in data.item_at
        ]
        row = _item_rounds(data, identity, appearances)
        row["final_status"], row["final_reason"] = _final_status(
            data, appearances, removed, latest_of
        )
        row["in_released_taxonomy"] = (
            (identity in released) if data.study.released_taxonomy_id else None
        )
        rows.append(row)
    return rows


def _item_rounds(data: StudyData, identity: str, appearances: list[RoundItem]) -> dict[str, Any]:
    """The identity's columns per round and the path of its outcomes."""
    row: dict[str, Any] = {
        "identity": identity,
        "kind": appearances[-1].kind,
        "first_round": appearances[0].round.number,
        "last_round": appearances[-1].round.number,
    }
    path = []
    for item in appearances:
        prefix = f"r{item.round.number}_"
        whole = data.whole_panel_stats(item)
        row[prefix + "name"] = item.name
        row[prefix + "version"] = item.item_version
        if whole is None:
            path.append("pending")
            continue
        row[prefix + "outcome"] = whole.outcome
        row[prefix + "median"] = whole.median
        row[prefix + "iqr"] = whole.iqr
        row[prefix + "pct_7_9"] = whole.pct_high
        row[prefix + "pct_1_3"] = whole.pct_low
        row[prefix + "n_rated"] = whole.n_rated
        path.append(whole.outcome)
    row["status_path"] = " > ".join(path)
    return row


def _final_status(
    data: StudyData,
    appearances: list[RoundItem],
    removed: dict[str, str],
    latest_of: dict[str, RoundItem],
) -> tuple[str, str]:
    """(final status, reason): removed (itself or with a removed item above it), else the
    outcome of the last analysed round."""
    latest = appearances[-1]
    identity = str(latest.identity)
    if identity in removed:
        return "removed", removed[identity]
    parent_of = {key: _text(item.parent_identity) for key, item in latest_of.items()}
    parent_of[identity] = _text(latest.parent_identity)
    ancestor = suggestions.removed_ancestor(identity, removed, parent_of)
    if ancestor is not None:
        above = latest_of.get(ancestor)
        return (
            "removed",
            f"{above.name if above else ancestor!r}, above it, was {removed[ancestor]}",
        )
    analysed = [item for item in appearances if data.whole_panel_stats(item) is not None]
    outcome = data.whole_panel_stats(analysed[-1]).outcome if analysed else ""
    if outcome:
        return outcome, f"outcome in round {analysed[-1].round.number}"
    return "not analysed yet", ""


# --------------------------------------------------------------------------- changes


def change_rows(data: StudyData) -> list[dict[str, Any]]:
    """Every change to an item with its reason: each triaged (or pending) suggestion, accepted
    or rejected, with the coordinator's reason and the panelist's rationale (never who made
    it), then any new item version no accepted suggestion explains (a reword or move made
    by other means), with the change note of the new version as its reason."""
    numbers = {round_.number for round_ in data.rounds}
    first_seen: dict[str, int] = {}
    for item in data.items:
        first_seen.setdefault(str(item.identity), item.round.number)
    rows: list[dict[str, Any]] = []
    explained: set[tuple[int, str]] = set()  # (round the change applies from, identity)
    claimed_new: set[str] = set()
    for suggestion in data.suggestions:
        number = suggestion.round.number
        accepted = suggestion.status == Suggestion.Status.ACCEPTED
        applies = number + 1 if accepted and number + 1 in numbers else None
        row = _suggestion_row(data, suggestion, applies)
        if applies:
            explained |= _explained_by(data, suggestion, applies)
            if suggestion.kind == Suggestion.Kind.ADD:
                new = _added_item(data, suggestion, applies, first_seen, claimed_new)
                if new is not None:
                    claimed_new.add(new)
                    row["identity"] = new
                    explained.add((applies, new))
        rows.append(row)
    return rows + _unexplained_versions(data, explained)


def _suggestion_row(data: StudyData, suggestion: Suggestion, applies: int | None) -> dict[str, Any]:
    number = suggestion.round.number
    target_key = str(suggestion.target_identity) if suggestion.target_identity else ""
    target = data.item_at.get((number, target_key))
    before, after = suggestions.suggestion_change(
        suggestion,
        name_of=lambda identity: _name_at(data, number, identity),
        parent_of=lambda identity: target.parent_identity if target else None,
    )
    item = target.name if target else ""
    if suggestion.kind == Suggestion.Kind.ADD:
        item = (suggestion.details or {}).get("name", "")
    return {
        "round": number,
        "decision": suggestion.status,
        "applies_from_round": applies,
        "identity": target_key,
        "item": item,
        "kind": suggestion.kind,
        "from": before,
        "to": after,
        "reason": suggestion.triage_reason or "(not triaged yet)",
        "panelist_rationale": suggestion.text,
        "source": "suggestion",
    }


def _explained_by(data: StudyData, suggestion: Suggestion, applies: int) -> set[tuple[int, str]]:
    """The (round, identity) new versions an accepted suggestion accounts for: its target,
    and for a merge the item merged into."""
    target = str(suggestion.target_identity) if suggestion.target_identity else ""
    explained = {(applies, target)} if target else set()
    if suggestion.kind == Suggestion.Kind.MERGE:
        into_key = (suggestion.details or {}).get("into_identity", "")
        into = data.item_at.get((suggestion.round.number, into_key))
        if into is not None:
            explained.add((applies, str(into.identity)))
    return explained


def _added_item(
    data: StudyData,
    suggestion: Suggestion,
    applies: int,
    first_seen: dict[str, int],
    claimed: set[str],
) -> str | None:
    """The identity an accepted add became: the first item new in the next round under the
    suggested name that no other add claimed."""
    name = (suggestion.details or {}).get("name")
    for item in data.items_of_round.get(applies, []):
        key = str(item.identity)
        if item.name == name and first_seen[key] == applies and key not in claimed:
            return key
    return None


def _unexplained_versions(data: StudyData, explained: set[tuple[int, str]]) -> list[dict[str, Any]]:
    rows = []
    previous: dict[str, RoundItem] = {}
    for item in data.items:
        key = str(item.identity)
        before = previous.get(key)
        previous[key] = item
        if before is None or (item.round.number, key) in explained:
            continue
        change = _version_change(data, before, item)
        if change is None:
            continue
        kind, old, new = change
        rows.append(
            {
                "round": before.round.number,
                "decision": "applied",
                "applies_from_round": item.round.number,
                "identity": key,
                "item": item.name,
                "kind": kind,
                "from": old,
                "to": new,
                "reason": item.change_note or "(no reason recorded)",
                "panelist_rationale": "",
                "source": f"item version {before.item_version} -> {item.item_version}",
            }
        )
    return rows


def _version_change(
    data: StudyData, before: RoundItem, item: RoundItem
) -> tuple[str, str, str] | None:
    """(kind, from, to) between two versions of an item; None when nothing changed."""
    moved = before.parent_identity != item.parent_identity
    reworded = before.name != item.name or before.description != item.description
    if not (moved or reworded or before.item_version != item.item_version):
        return None
    if moved:
        old = data.item_at.get((before.round.number, str(before.parent_identity)))
        new = data.item_at.get((item.round.number, str(item.parent_identity)))
        return (
            "move",
            f"under {old.name if old else '?'}",
            f"under {new.name if new else '?'}",
        )
    if before.name != item.name:
        return "reword", before.name, item.name
    return "reword", before.description, item.description


__all__ = [
    "CHANGE_COLUMNS",
    "ITEM_ROUND_FIELDS",
    "change_rows",
    "item_columns",
    "item_rows",
]


def _text(identity: Any) -> str | None:
    return str(identity) if identity else None


def _name_at(data: StudyData, number: int, identity: Any) -> str | None:
    """The name of an identity's version in round `number`, or None."""
    item = data.item_at.get((number, str(identity))) if identity else None
    return item.name if item else None


def _removed_by_suggestion(data: StudyData) -> dict[str, str]:
    """Identities an accepted delete or merge took out -> how and why, in words."""
    removals = suggestions.removed_identities(data.suggestions)
    return {
        identity: removal.explain(
            into_name=_name_at(data, removal.round_number, removal.into_identity)
        )
        for identity, removal in removals.items()
    }
