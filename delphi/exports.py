"""Exports of a Delphi study: the locked protocol, the flow of panelists, the item x round
table, every change to an item, anonymised comments, long-format raw data, the stored
statistics, between-round stability and a prefilled ACCORD / CREDES checklist.

Every row builder reads one `StudyData`, loaded with a fixed number of queries whatever the
number of items, rounds or panelists (`load_study_data`); `render_export` turns one export
name into (content, content type, filename).

Rules every export follows
- Only counted answers appear: submitted (`is_draft=False`) answers of panelists whose
  PanelistRound is submitted. Drafts and the answers of non-responders never do.
- Panelists appear by pseudonym only; names, usernames and e-mail addresses are never read.
  Free text (comments, reasons given outside the IQR, suggestion rationales) never carries a
  pseudonym, and comments are sorted by round, item and text so their order says nothing
  about who wrote them. Free text is therefore not in raw.csv, where every row has one.
- The whole panel is the group "all" (stored as "" in RoundItemStatistics); panelists
  without a stakeholder group are "(no group)".
- Numbers are written with up to 10 significant digits; an empty cell means "no value".
"""

from __future__ import annotations

import csv
import html
import io
import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from delphi import consensus, protocol, stats
from delphi.errors import DelphiError
from delphi.models import (
    DelphiAuditEvent,
    DelphiStudy,
    Panelist,
    PanelistRound,
    Response,
    Round,
    RoundItem,
    RoundItemStatistics,
    Suggestion,
    TaxonomyNode,
)

WHOLE_PANEL = "all"
NO_GROUP = "(no group)"
TO_AUTHORS = "to be completed by the authors"
# Rounds whose answers are final: stability and the per-round tables only use these.
CLOSED_STATUSES = (Round.Status.CLOSED, Round.Status.ANALYSED, Round.Status.FEEDBACK_RELEASED)
RESOLVED = {str(outcome) for outcome in consensus.RESOLVED_OUTCOMES}


# --------------------------------------------------------------------------- loading


@dataclass
class StudyData:
    """Everything the exports and the report read, loaded once (see `load_study_data`)."""

    study: DelphiStudy
    document: dict[str, Any] | None  # the locked protocol document; None while in set-up
    rounds: list[Round]
    items: list[RoundItem]  # every round's items, by round number then position
    statistics: list[RoundItemStatistics]
    panelists: list[Panelist]
    entries: list[PanelistRound]
    responses: list[Response]  # counted answers only
    suggestions: list[Suggestion]
    released_nodes: list[TaxonomyNode]
    n_coordinators: int
    reminders: Counter[int]  # round number -> reminder batches sent
    round_by_pk: dict[int, Round] = field(default_factory=dict)
    item_by_pk: dict[int, RoundItem] = field(default_factory=dict)
    panelist_by_pk: dict[int, Panelist] = field(default_factory=dict)
    items_of_round: dict[int, list[RoundItem]] = field(default_factory=dict)
    # (round number, identity) -> that round's item; (round item pk, group) -> its statistics
    item_at: dict[tuple[int, str], RoundItem] = field(default_factory=dict)
    stats_of: dict[tuple[int, str], RoundItemStatistics] = field(default_factory=dict)

    @property
    def quantile_method(self) -> str:
        if self.document is None:
            return stats.DEFAULT_QUANTILE_METHOD
        return self.document["statistics"]["quantile_method"]

    @property
    def min_group_raters(self) -> int:
        if self.document is None:
            return stats.DEFAULT_MIN_GROUP_RATERS
        return int(self.document["statistics"]["min_group_raters"])

    def group_of(self, panelist_id: int) -> str:
        return self.panelist_by_pk[panelist_id].stakeholder_group or NO_GROUP

    def identities_in_order(self) -> list[str]:
        """Every identity once, in the order it was first put to the panel."""
        return list(dict.fromkeys(str(item.identity) for item in self.items))


def load_study_data(study: DelphiStudy) -> StudyData:
    """One query per table, whatever the size of the study; objects are linked in memory."""
    rounds = list(Round.objects.filter(study=study).order_by("number"))
    round_by_pk = {round_.pk: round_ for round_ in rounds}
    items = list(
        RoundItem.objects.filter(round__study=study).order_by("round__number", "position", "id")
    )
    for item in items:
        item.round = round_by_pk[item.round_id]
    item_by_pk = {item.pk: item for item in items}
    statistics = list(
        RoundItemStatistics.objects.filter(round_item__round__study=study).order_by("id")
    )
    for row in statistics:
        row.round_item = item_by_pk[row.round_item_id]
    panelists = list(Panelist.objects.filter(study=study).order_by("pseudonym"))
    panelist_by_pk = {panelist.pk: panelist for panelist in panelists}
    entries = list(PanelistRound.objects.filter(round__study=study).order_by("round_id", "id"))
    for entry in entries:
        entry.round = round_by_pk[entry.round_id]
        entry.panelist = panelist_by_pk[entry.panelist_id]
    submitted = {
        (entry.panelist_id, entry.round_id)
        for entry in entries
        if entry.status == PanelistRound.Status.SUBMITTED
    }
    responses = []
    for response in Response.objects.filter(
        round_item__round__study=study, is_draft=False
    ).order_by("id"):
        item = item_by_pk[response.round_item_id]
        if (response.panelist_id, item.round_id) in submitted:
            response.round_item = item
            response.panelist = panelist_by_pk[response.panelist_id]
            responses.append(response)
    suggestions = list(
        Suggestion.objects.filter(round__study=study).order_by("round__number", "id")
    )
    for suggestion in suggestions:
        suggestion.round = round_by_pk[suggestion.round_id]
    released_nodes = (
        list(study.released_taxonomy.nodes.order_by("position", "id"))
        if study.released_taxonomy_id
        else []
    )
    data = StudyData(
        study=study,
        document=study.protocol_document,
        rounds=rounds,
        items=items,
        statistics=statistics,
        panelists=panelists,
        entries=entries,
        responses=responses,
        suggestions=suggestions,
        released_nodes=released_nodes,
        n_coordinators=study.coordinators.count(),
        reminders=Counter(
            int(target.removeprefix("round "))
            for target in DelphiAuditEvent.objects.filter(
                study=study, action="round.remind"
            ).values_list("target", flat=True)
            if target.removeprefix("round ").isdigit()
        ),
        round_by_pk=round_by_pk,
        item_by_pk=item_by_pk,
        panelist_by_pk=panelist_by_pk,
    )
    data.items_of_round = {round_.number: [] for round_ in rounds}
    for item in items:
        data.items_of_round[item.round.number].append(item)
        data.item_at[(item.round.number, str(item.identity))] = item
    data.stats_of = {(row.round_item_id, row.group): row for row in statistics}
    return data


def _data(study: DelphiStudy, data: StudyData | None) -> StudyData:
    return data if data is not None else load_study_data(study)


# --------------------------------------------------------------------------- formatting


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format(value, ".10g")
    if isinstance(value, datetime):
        return value.isoformat()
    text = str(value)
    # A cell starting with = + - @ runs as a formula in spreadsheet programs (CSV injection);
    # free text from panelists goes through here, so such cells get a leading apostrophe.
    if text[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + text
    return text


def rows_to_csv(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> bytes:
    """CSV (UTF-8, header row, CRLF line ends as RFC 4180 has them) of `rows` in `columns`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(column)) for column in columns])
    return buffer.getvalue().encode("utf-8")


def _iso(value: datetime | None) -> str:
    return value.isoformat() if value else ""


def _num(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "\u2013"
    return f"{value:.{digits}f}".rstrip("0").rstrip(".") if digits else f"{value:.0f}"


def _pct(part: int, whole: int) -> float | None:
    return 100.0 * part / whole if whole else None


# --------------------------------------------------------------------------- protocol


def protocol_export(*, study: DelphiStudy) -> dict[str, Any]:
    """The locked protocol document with its stored hash, whether the hash still matches the
    document, and when it was locked. ValueError when the protocol is not locked."""
    if study.protocol_document is None or not study.protocol_hash:
        raise DelphiError(
            f"the protocol of study {study.pk} ({study.title!r}) is not locked yet: there is no "
            "frozen protocol to export; lock it first"
        )
    return {
        "study": study.pk,
        "title": study.title,
        "locked_at": _iso(study.protocol_locked_at),
        "protocol_hash": study.protocol_hash,
        "hash_algorithm": "SHA-256 of the canonical JSON of the document "
        "(sorted keys, no insignificant whitespace, UTF-8)",
        # Recomputed here: a document edited after locking shows up as false.
        "hash_matches_document": protocol.protocol_hash(study.protocol_document)
        == study.protocol_hash,
        "document": study.protocol_document,
    }


# --------------------------------------------------------------------------- flow

FLOW_COLUMNS = [
    "round",
    "round_status",
    "group",
    "invited",
    "submitted",
    "pending",
    "non_responders",
    "withdrawn",
    "response_rate_pct",
    "round_1_respondents",
    "retained_from_round_1",
    "attrition_vs_round_1_pct",
]


def _groups(data: StudyData) -> list[str]:
    groups = sorted({panelist.stakeholder_group or NO_GROUP for panelist in data.panelists})
    return [] if groups in ([], [NO_GROUP]) else groups


def flow_rows(*, study: DelphiStudy, data: StudyData | None = None) -> list[dict[str, Any]]:
    """Per round and group (the whole panel first): who was invited, submitted, did not
    respond, withdrew, is still pending (open round), the response rate (submitted /
    invited) and attrition: the share of round-1 respondents who did not submit this round."""
    data = _data(study, data)
    by_round: dict[int, list[PanelistRound]] = defaultdict(list)
    for entry in data.entries:
        by_round[entry.round.number].append(entry)
    first = {
        entry.panelist_id
        for entry in by_round.get(1, [])
        if entry.status == PanelistRound.Status.SUBMITTED
    }
    rows = []
    for round_ in data.rounds:
        entries = by_round.get(round_.number, [])
        if round_.status == Round.Status.DRAFT and not entries:
            continue
        for group in [WHOLE_PANEL, *_groups(data)]:
            mine = [
                e for e in entries if group == WHOLE_PANEL or data.group_of(e.panelist_id) == group
            ]
            status = Counter(entry.status for entry in mine)
            submitted = {e.panelist_id for e in mine if e.status == PanelistRound.Status.SUBMITTED}
            baseline = {pk for pk in first if group == WHOLE_PANEL or data.group_of(pk) == group}
            retained = len(baseline & submitted)
            rows.append(
                {
                    "round": round_.number,
                    "round_status": round_.status,
                    "group": group,
                    "invited": len(mine),
                    "submitted": len(submitted),
                    "pending": status[PanelistRound.Status.INVITED]
                    + status[PanelistRound.Status.STARTED],
                    "non_responders": status[PanelistRound.Status.NON_RESPONDER],
                    "withdrawn": status[PanelistRound.Status.WITHDRAWN],
                    "response_rate_pct": _pct(len(submitted), len(mine)),
                    "round_1_respondents": len(baseline),
                    "retained_from_round_1": retained,
                    "attrition_vs_round_1_pct": _pct(len(baseline) - retained, len(baseline)),
                }
            )
    return rows


# --------------------------------------------------------------------------- items

ITEM_ROUND_FIELDS = ("name", "version", "outcome", "median", "iqr", "pct_7_9", "pct_1_3", "n_rated")


def removed_by_suggestion(data: StudyData) -> dict[str, str]:
    """Identities an accepted delete or merge took out, with how and why (the in-memory twin
    of services.removed_identities)."""
    removed: dict[str, str] = {}
    for suggestion in data.suggestions:
        if suggestion.status != Suggestion.Status.ACCEPTED:
            continue
        target = str(suggestion.target_identity)
        if suggestion.kind == Suggestion.Kind.DELETE:
            removed[target] = (
                f"deleted after round {suggestion.round.number}: {suggestion.triage_reason}"
            )
        elif suggestion.kind == Suggestion.Kind.MERGE:
            into = data.item_at.get(
                (suggestion.round.number, suggestion.details.get("into_identity", ""))
            )
            into_name = f" into {into.name!r}" if into else ""
            removed[target] = (
                f"merged{into_name} after round {suggestion.round.number}: "
                f"{suggestion.triage_reason}"
            )
    return removed


def item_columns(data: StudyData) -> list[str]:
    columns = ["identity", "kind", "first_round", "last_round"]
    for round_ in data.rounds:
        columns += [f"r{round_.number}_{name}" for name in ITEM_ROUND_FIELDS]
    return [*columns, "status_path", "final_status", "final_reason", "in_released_taxonomy"]


def item_rows(*, study: DelphiStudy, data: StudyData | None = None) -> list[dict[str, Any]]:
    """One row per identity: its wording, version, outcome and headline statistics in every
    round it was put to the panel, the path of its outcomes ("no_consensus > consensus_in";
    "pending" for a round not analysed yet) and its final status (the latest outcome, or
    "removed" by an accepted delete / merge suggestion, or with its removed parent)."""
    data = _data(study, data)
    removed = removed_by_suggestion(data)
    released = {str(node.identity) for node in data.released_nodes}
    latest_of = {str(item.identity): item for item in data.items}  # the last round wins
    rows = []
    for identity in data.identities_in_order():
        appearances = [
            data.item_at[(r.number, identity)]
            for r in data.rounds
            if (r.number, identity) in data.item_at
        ]
        latest = appearances[-1]
        row: dict[str, Any] = {
            "identity": identity,
            "kind": latest.kind,
            "first_round": appearances[0].round.number,
            "last_round": latest.round.number,
        }
        path = []
        last_outcome = ""
        for item in appearances:
            prefix = f"r{item.round.number}_"
            whole = data.stats_of.get((item.pk, ""))
            row[prefix + "name"] = item.name
            row[prefix + "version"] = item.item_version
            if whole is None:
                path.append("pending")
                continue
            row.update(
                {
                    prefix + "outcome": whole.outcome,
                    prefix + "median": whole.median,
                    prefix + "iqr": whole.iqr,
                    prefix + "pct_7_9": whole.pct_high,
                    prefix + "pct_1_3": whole.pct_low,
                    prefix + "n_rated": whole.n_rated,
                }
            )
            path.append(whole.outcome)
            last_outcome = whole.outcome
        row["status_path"] = " > ".join(path)
        ancestor = _removed_ancestor(latest, removed, latest_of)
        if identity in removed:
            row["final_status"], row["final_reason"] = "removed", removed[identity]
        elif ancestor is not None:
            above = latest_of.get(ancestor)
            row["final_status"] = "removed"
            row["final_reason"] = (
                f"{above.name if above else ancestor!r}, above it, was {removed[ancestor]}"
            )
        elif last_outcome:
            row["final_status"] = last_outcome
            row["final_reason"] = f"outcome in round {_last_analysed(data, appearances)}"
        else:
            row["final_status"], row["final_reason"] = "not analysed yet", ""
        row["in_released_taxonomy"] = (
            (identity in released) if data.study.released_taxonomy_id else None
        )
        rows.append(row)
    return rows


def _removed_ancestor(
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


def _last_analysed(data: StudyData, appearances: list[RoundItem]) -> int:
    return max(item.round.number for item in appearances if (item.pk, "") in data.stats_of)


# --------------------------------------------------------------------------- changes

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


def change_rows(*, study: DelphiStudy, data: StudyData | None = None) -> list[dict[str, Any]]:
    """Every change to an item with its reason: each triaged (or pending) suggestion, accepted
    or rejected, with the coordinator's reason and the panelist's rationale (never who made
    it), then any new item version no accepted suggestion explains (a reword or move made
    by other means), with the change note of the new version as its reason."""
    data = _data(study, data)
    numbers = {round_.number for round_ in data.rounds}
    rows: list[dict[str, Any]] = []
    explained: set[tuple[int, str]] = set()  # (round the change applies from, identity)
    claimed_new: set[str] = set()
    seen_before: dict[str, int] = {}
    for item in data.items:
        seen_before.setdefault(str(item.identity), item.round.number)
    for suggestion in data.suggestions:
        number = suggestion.round.number
        accepted = suggestion.status == Suggestion.Status.ACCEPTED
        applies = number + 1 if accepted and number + 1 in numbers else None
        details = suggestion.details or {}
        target_key = str(suggestion.target_identity) if suggestion.target_identity else ""
        target = data.item_at.get((number, target_key))
        row = {
            "round": number,
            "decision": suggestion.status,
            "applies_from_round": applies,
            "identity": target_key,
            "item": target.name if target else "",
            "kind": suggestion.kind,
            "from": "",
            "to": "",
            "reason": suggestion.triage_reason or "(not triaged yet)",
            "panelist_rationale": suggestion.text,
            "source": "suggestion",
        }
        if suggestion.kind == Suggestion.Kind.RENAME:
            row["from"], row["to"] = (target.name if target else ""), details.get("name", "")
        elif suggestion.kind == Suggestion.Kind.MOVE:
            old = data.item_at.get((number, str(target.parent_identity))) if target else None
            new = data.item_at.get((number, details.get("parent_identity", "")))
            row["from"] = f"under {old.name}" if old else ""
            row["to"] = f"under {new.name}" if new else ""
        elif suggestion.kind == Suggestion.Kind.MERGE:
            into = data.item_at.get((number, details.get("into_identity", "")))
            row["from"] = target.name if target else ""
            row["to"] = f"merged into {into.name}" if into else "merged"
            if into is not None and applies:
                explained.add((applies, str(into.identity)))
        elif suggestion.kind == Suggestion.Kind.DELETE:
            row["from"], row["to"] = (target.name if target else ""), "(deleted)"
        elif suggestion.kind == Suggestion.Kind.ADD:
            parent = data.item_at.get((number, details.get("parent_identity", "")))
            row["to"] = details.get("name", "") + (f" (under {parent.name})" if parent else "")
            row["item"] = details.get("name", "")
            if applies:
                # The new item is the one first seen in the next round under that name.
                for item in data.items_of_round.get(applies, []):
                    key = str(item.identity)
                    if (
                        item.name == details.get("name")
                        and seen_before[key] == applies
                        and key not in claimed_new
                    ):
                        claimed_new.add(key)
                        row["identity"] = key
                        explained.add((applies, key))
                        break
        if applies and target_key:
            explained.add((applies, target_key))
        rows.append(row)
    rows += _unexplained_versions(data, explained)
    return rows


def _unexplained_versions(data: StudyData, explained: set[tuple[int, str]]) -> list[dict[str, Any]]:
    rows = []
    previous: dict[str, RoundItem] = {}
    for item in data.items:
        key = str(item.identity)
        before = previous.get(key)
        previous[key] = item
        if before is None or (item.round.number, key) in explained:
            continue
        moved = before.parent_identity != item.parent_identity
        reworded = before.name != item.name or before.description != item.description
        if not (moved or reworded or before.item_version != item.item_version):
            continue
        if moved:
            old = data.item_at.get((before.round.number, str(before.parent_identity)))
            new = data.item_at.get((item.round.number, str(item.parent_identity)))
            change = (
                "move",
                f"under {old.name if old else '?'}",
                f"under {new.name if new else '?'}",
            )
        elif before.name != item.name:
            change = ("reword", before.name, item.name)
        else:
            change = ("reword", before.description, item.description)
        rows.append(
            {
                "round": before.round.number,
                "decision": "applied",
                "applies_from_round": item.round.number,
                "identity": key,
                "item": item.name,
                "kind": change[0],
                "from": change[1],
                "to": change[2],
                "reason": item.change_note or "(no reason recorded)",
                "panelist_rationale": "",
                "source": f"item version {before.item_version} -> {item.item_version}",
            }
        )
    return rows


# --------------------------------------------------------------------------- comments

COMMENT_COLUMNS = ["round", "item_identity", "item", "item_version", "kind", "text"]


def comment_rows(*, study: DelphiStudy, data: StudyData | None = None) -> list[dict[str, Any]]:
    """Every comment and every reason given for a rating outside the IQR, without who wrote
    it, sorted by round, item and text (never by panelist or time of writing)."""
    data = _data(study, data)
    rows = []
    for response in data.responses:
        item = response.round_item
        for kind, text in (
            ("comment", response.comment),
            ("reason outside IQR", response.reason_outside_iqr),
        ):
            if text.strip():
                rows.append(
                    {
                        "round": item.round.number,
                        "item_identity": str(item.identity),
                        "item": item.name,
                        "item_version": item.item_version,
                        "kind": kind,
                        "text": text.strip(),
                        "_position": item.position,
                    }
                )
    rows.sort(key=lambda r: (r["round"], r["_position"], r["item_identity"], r["kind"], r["text"]))
    for row in rows:
        del row["_position"]
    return rows


# --------------------------------------------------------------------------- raw data

RAW_COLUMNS = [
    "round",
    "panelist",
    "stakeholder_group",
    "record",
    "item_identity",
    "item_kind",
    "item",
    "item_version",
    "rating",
    "unable_to_rate",
    "placement_agrees",
    "placement_choice_identity",
    "placement_choice",
    "comprehensiveness",
]


def raw_rows(*, study: DelphiStudy, data: StudyData | None = None) -> list[dict[str, Any]]:
    """Long format, one row per counted answer (record "item") and one per panelist-round
    with a comprehensiveness score (record "comprehensiveness", 1-5). Pseudonyms only; no
    free text (see the module docstring)."""
    data = _data(study, data)
    category_name = {
        (item.round.number, str(item.identity)): item.name
        for item in data.items
        if item.kind == "category"
    }
    rows = []
    for response in data.responses:
        item = response.round_item
        choice = str(response.placement_choice) if response.placement_choice else ""
        rows.append(
            {
                "round": item.round.number,
                "panelist": response.panelist.pseudonym,
                "stakeholder_group": response.panelist.stakeholder_group,
                "record": "item",
                "item_identity": str(item.identity),
                "item_kind": item.kind,
                "item": item.name,
                "item_version": item.item_version,
                "rating": response.rating,
                "unable_to_rate": response.unable_to_rate,
                "placement_agrees": response.placement_agrees,
                "placement_choice_identity": choice,
                "placement_choice": category_name.get((item.round.number, choice), ""),
                "_order": (item.round.number, response.panelist.pseudonym, 0, item.position),
            }
        )
    for entry in data.entries:
        if entry.status == PanelistRound.Status.SUBMITTED and entry.comprehensiveness is not None:
            rows.append(
                {
                    "round": entry.round.number,
                    "panelist": entry.panelist.pseudonym,
                    "stakeholder_group": entry.panelist.stakeholder_group,
                    "record": "comprehensiveness",
                    "comprehensiveness": entry.comprehensiveness,
                    "_order": (entry.round.number, entry.panelist.pseudonym, 1, 0),
                }
            )
    rows.sort(key=lambda r: r["_order"])
    for row in rows:
        del row["_order"]
    return rows


# --------------------------------------------------------------------------- statistics

STATISTICS_COLUMNS = [
    "round",
    "item_identity",
    "item",
    "item_version",
    "item_kind",
    "group",
    "n_invited",
    "n_rated",
    "n_unable",
    "median",
    "q1",
    "q3",
    "iqr",
    "mean",
    "sd",
    *(f"count_{point}" for point in stats.SCALE_POINTS),
    "pct_1_3",
    "pct_4_6",
    "pct_7_9",
    "p30",
    "p70",
    "ipr",
    "ai",
    "ipras",
    "disagreement",
    "outcome",
    "quantile_method",
]


def statistics_rows(*, study: DelphiStudy, data: StudyData | None = None) -> list[dict[str, Any]]:
    """Every stored statistics row, whole panel ("all") and per group ("withheld" rows for
    groups below the locked minimum), with the quantile method used for Q1/Q3/P30/P70."""
    data = _data(study, data)
    method = stats.describe_quantile_method(data.quantile_method)
    rows = []
    for row in sorted(
        data.statistics,
        key=lambda r: (r.round_item.round.number, r.round_item.position, r.group != "", r.group),
    ):
        item = row.round_item
        counts = row.counts or {}
        rows.append(
            {
                "round": item.round.number,
                "item_identity": str(item.identity),
                "item": item.name,
                "item_version": item.item_version,
                "item_kind": item.kind,
                "group": row.group or WHOLE_PANEL,
                "n_invited": row.n_invited,
                "n_rated": row.n_rated,
                "n_unable": row.n_unable,
                "median": row.median,
                "q1": row.q1,
                "q3": row.q3,
                "iqr": row.iqr,
                "mean": row.mean,
                "sd": row.sd,
                **{
                    f"count_{point}": counts.get(str(point)) if counts else None
                    for point in stats.SCALE_POINTS
                },
                "pct_1_3": row.pct_low,
                "pct_4_6": row.pct_mid,
                "pct_7_9": row.pct_high,
                "p30": row.p30,
                "p70": row.p70,
                "ipr": row.ipr,
                "ai": row.ai,
                "ipras": row.ipras,
                "disagreement": row.disagreement,
                "outcome": row.outcome,
                "quantile_method": method,
            }
        )
    return rows


# --------------------------------------------------------------------------- stability

STABILITY_COLUMNS = [
    "round_from",
    "round_to",
    "item_identity",
    "item",
    "item_version",
    "n_paired",
    "pct_unchanged",
    "mean_abs_change",
    "wilcoxon_statistic",
    "wilcoxon_p",
    "wilcoxon_note",
    "weighted_kappa",
    "kappa_note",
    "method",
]


def stability_method() -> str:
    return (
        f"{stats.describe_wilcoxon()}; quadratic weighted kappa (Cohen 1968) on the 1-9 scale; "
        "panelists paired on their submitted ratings, unable-to-rate left out; only items "
        "with the same item version in both rounds (a reworded item is a new question)"
    )


def stability_rows(*, study: DelphiStudy, data: StudyData | None = None) -> list[dict[str, Any]]:
    """Per item and consecutive pair of closed rounds in which it had the same item version:
    how the paired panelists' ratings moved (delphi.stats.rating_stability)."""
    data = _data(study, data)
    ratings: dict[int, dict[int, int | None]] = defaultdict(dict)  # round item pk -> panelist
    for response in data.responses:
        ratings[response.round_item_id][response.panelist_id] = response.rating
    closed = [round_ for round_ in data.rounds if round_.status in CLOSED_STATUSES]
    method = stability_method()
    rows = []
    for earlier, later in itertools.pairwise(closed):
        if later.number != earlier.number + 1:
            continue
        for item in data.items_of_round[later.number]:
            before = data.item_at.get((earlier.number, str(item.identity)))
            if before is None or before.item_version != item.item_version:
                continue
            result = stats.rating_stability(ratings.get(before.pk, {}), ratings.get(item.pk, {}))
            rows.append(
                {
                    "round_from": earlier.number,
                    "round_to": later.number,
                    "item_identity": str(item.identity),
                    "item": item.name,
                    "item_version": item.item_version,
                    "n_paired": result.n_paired,
                    "pct_unchanged": result.pct_unchanged,
                    "mean_abs_change": result.mean_abs_change,
                    "wilcoxon_statistic": result.wilcoxon_statistic,
                    "wilcoxon_p": result.wilcoxon_p,
                    "wilcoxon_note": result.wilcoxon_note,
                    "weighted_kappa": result.weighted_kappa,
                    "kappa_note": result.kappa_note,
                    "method": method,
                }
            )
    return rows


# --------------------------------------------------------------------------- protocol in words

CARRY_OVER_WORDS = {
    DelphiStudy.CarryOver.DROP_RESOLVED: "items that reached consensus (in or out) are not "
    "rated again; items without consensus, and every item a triaged suggestion changed, go "
    "to the next round",
    DelphiStudy.CarryOver.RERATE_ALL: "every item is rated again in every round, whatever its "
    "outcome; items a triaged suggestion changed go to the next round as a new version",
}
PLACEMENT_WORDS = {
    "none": "placement under a parent is not asked",
    "agree": "for each subcategory and task, whether it belongs under its parent (yes / no)",
    "choose": "for each subcategory, which category it belongs under",
}


def describe_stopping_rule(rule: Mapping[str, Any]) -> str:
    """The locked stopping rule in words; its criteria are alternatives."""
    parts = []
    if "max_rounds" in rule:
        parts.append(f"after at most {rule['max_rounds']} rounds")
    if rule.get("all_resolved"):
        parts.append("when every item of the latest round reached consensus (in or out)")
    if "stability" in rule:
        threshold = rule["stability"]["pct_unchanged_at_least"]
        parts.append(
            f"when every unresolved item has at least {threshold:g}% of its paired panelists "
            "unchanged since the round before"
        )
    return "Stop " + ", or ".join(parts) + ", whichever comes first." if parts else "(none)"


def describe_questions(questions: Mapping[str, Any]) -> str:
    plural = {"category": "categories", "subcategory": "subcategories", "task": "tasks"}
    kinds = ", ".join(plural[kind] for kind in questions["rate_kinds"])
    parts = [
        f"Rated items: {kinds}.",
        f"Question: {protocol.SCALE['question']}",
        "'Unable to rate' offered (not counted as a rating)."
        if questions["allow_unable_to_rate"]
        else "'Unable to rate' not offered.",
        f"Placement: {PLACEMENT_WORDS[questions['placement']]}.",
        "A free-text comment per item." if questions["comments"] else "No per-item comment.",
        "Comprehensiveness of the whole taxonomy rated 1-5 once per round."
        if questions["comprehensiveness"]
        else "Comprehensiveness not asked.",
    ]
    return " ".join(parts)


def describe_scale() -> str:
    bands = "; ".join(f"{band} {words}" for band, words in protocol.SCALE["bands"].items())
    return f"1-9 (RAND/UCLA), in three bands: {bands}"


def protocol_settings(data: StudyData) -> list[tuple[str, str]]:
    """(setting, in words) for every locked setting; from the locked document when there is
    one, else from the study as it stands (and the report says it is not locked)."""
    study = data.study
    if data.document is not None:
        document = data.document
        questions = document["questions"]
        rule = document["consensus_rule"]
        carry_over = document["carry_over"]
        stopping = document["stopping_rule"]
        reason = document["ask_reason_outside_iqr"]
        taxonomy = document.get("taxonomy_draft", {})
    else:
        questions = protocol.validate_questions(study.questions)
        rule = study.consensus_rule
        carry_over = study.carry_over
        stopping = study.stopping_rule
        reason = study.ask_reason_outside_iqr
        taxonomy = {"name": study.draft_taxonomy.name}
    try:
        rule_words = consensus.rule_from_dict(rule).describe()
    except ValueError as exc:
        rule_words = f"(invalid rule: {exc})"
    return [
        ("Aims", (data.document or {}).get("aims", study.aims) or "(none given)"),
        ("Draft taxonomy", str(taxonomy.get("name", "")) or "(unnamed)"),
        ("Questions", describe_questions(questions)),
        ("Scale", describe_scale()),
        ("Consensus rule (defined before round 1)", rule_words),
        ("Carry-over between rounds", CARRY_OVER_WORDS.get(carry_over, carry_over)),
        ("Stopping rule", describe_stopping_rule(stopping)),
        (
            "Reason for a rating outside the IQR",
            "asked from round 2 when a panelist rates outside the panel's interquartile range "
            "of the round before"
            if reason
            else "not asked",
        ),
        (
            "Quantile method (Q1, Q3, P30, P70)",
            stats.describe_quantile_method(data.quantile_method),
        ),
        (
            "Group statistics",
            f"per stakeholder group, withheld for a group with fewer than "
            f"{data.min_group_raters} ratings (so no one's rating can be read back)",
        ),
    ]


# --------------------------------------------------------------------------- checklist

CHECKLIST_SECTIONS = (
    "Title and abstract",
    "Introduction",
    "Methods",
    "Results",
    "Discussion",
    "Other information",
)
PREFILLED = "prefilled"
PARTLY = "partly prefilled"


@dataclass(frozen=True)
class ChecklistItem:
    guideline: str  # "ACCORD" or "CREDES"
    number: str
    section: str  # one of CHECKLIST_SECTIONS
    topic: str
    text: str  # our short paraphrase of the guideline item
    answer: str
    status: str  # PREFILLED, PARTLY or TO_AUTHORS


def _facts(data: StudyData) -> dict[str, str]:
    """What the tool knows for certain, one sentence each, for the checklist answers."""
    study = data.study
    settings = dict(protocol_settings(data))
    flow = flow_rows(study=study, data=data)
    whole = [row for row in flow if row["group"] == WHOLE_PANEL]
    run = [round_ for round_ in data.rounds if round_.status != Round.Status.DRAFT]
    facts: dict[str, str] = {}
    if study.protocol_locked_at:
        facts["lock"] = (
            f"locked {study.protocol_locked_at:%Y-%m-%d %H:%M} UTC, before round 1 opened; "
            f"SHA-256 {study.protocol_hash}"
        )
    else:
        facts["lock"] = "the protocol is NOT locked yet"
    facts["rule"] = f"{settings['Consensus rule (defined before round 1)']} ({facts['lock']})"
    facts["stopping"] = settings["Stopping rule"]
    facts["carry_over"] = settings["Carry-over between rounds"]
    facts["questions"] = f"{settings['Questions']} Scale: {settings['Scale']}."
    facts["rounds"] = f"{len(run)} round(s) run" + (
        f"; the study ended: {study.finished_reason}" if study.finished_reason else ""
    )
    facts["response"] = (
        "; ".join(
            f"round {row['round']}: {row['submitted']}/{row['invited']} submitted "
            f"({_num(row['response_rate_pct'])}%)"
            for row in whole
        )
        or "no round opened yet"
    )
    facts["attrition"] = (
        "; ".join(
            f"round {row['round']}: {row['retained_from_round_1']} of "
            f"{row['round_1_respondents']} round-1 respondents submitted "
            f"(attrition {_num(row['attrition_vs_round_1_pct'])}%), "
            f"{row['withdrawn']} withdrew, {row['non_responders']} did not respond"
            for row in whole
            if row["round"] > 1
        )
        or "only one round so far"
    )
    groups = Counter(p.stakeholder_group or NO_GROUP for p in data.panelists)
    specialties = Counter(p.specialty or "(not recorded)" for p in data.panelists)
    facts["n_panel"] = f"{len(data.panelists)} panelists invited"
    facts["panel"] = (
        f"{len(data.panelists)} panelists invited, "
        f"{sum(1 for p in data.panelists if p.joined_at)} joined, "
        f"{sum(1 for p in data.panelists if p.withdrawn_at)} withdrew; by stakeholder group: "
        + ", ".join(f"{g} {n}" for g, n in sorted(groups.items()))
        + "; by specialty: "
        + ", ".join(f"{s} {n}" for s, n in sorted(specialties.items()))
    )
    outcomes = []
    for round_ in run:
        counts = Counter(
            row.outcome
            for row in data.statistics
            if row.group == "" and row.round_item.round_id == round_.pk
        )
        if counts:
            outcomes.append(
                f"round {round_.number}: "
                + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(counts.items()))
            )
    facts["outcomes"] = "; ".join(outcomes) or "no round analysed yet"
    decided = Counter(s.status for s in data.suggestions)
    facts["suggestions"] = (
        f"round 1 collected panelists' suggestions (add, rename, move, merge, delete); "
        f"{len(data.suggestions)} made, {decided[Suggestion.Status.ACCEPTED]} accepted, "
        f"{decided[Suggestion.Status.REJECTED]} rejected, {decided[Suggestion.Status.PENDING]} "
        "pending; each decision has a recorded reason (changes.csv); a changed item is rated "
        "again as a new item version"
    )
    if study.released_taxonomy_id:
        facts["final"] = (
            f"released as taxonomy version {study.released_taxonomy.name!r} with "
            f"{len(data.released_nodes)} nodes"
        )
    else:
        facts["final"] = "no taxonomy released yet"
    facts["feedback"] = (
        "between rounds each panelist saw, per item, the whole panel's median, IQR and "
        "distribution of ratings, their own previous rating, and the anonymous comments"
        + (
            "; a rating outside the previous IQR required a reason"
            if (data.document or {}).get("ask_reason_outside_iqr", study.ask_reason_outside_iqr)
            else ""
        )
    )
    facts["analysis"] = (
        f"per item: median, Q1/Q3 and IQR, mean, SD, % in each band, P30/P70, IPR, IPRAS and "
        f"the RAND/UCLA disagreement flag; {settings['Quantile method (Q1, Q3, P30, P70)']}; "
        "'unable to rate' is not a rating and is in no denominator; only submitted answers "
        f"count; {settings['Group statistics']}; stability between rounds: {stability_method()}"
    )
    facts["anonymity"] = (
        "panelists are known to each other and in every export only by pseudonym; group "
        "feedback is anonymous; comments are fed back and exported without their author"
    )
    facts["mode"] = (
        "online questionnaire in medhelm-studio, one-time personal invitation links, answers "
        "saved as drafts until submitted; rounds: "
        + (
            "; ".join(
                f"round {r.number} opened {r.opened_at:%Y-%m-%d}"
                + (f", closed {r.closed_at:%Y-%m-%d}" if r.closed_at else "")
                + f", {data.reminders[r.number]} reminder(s) sent"
                for r in run
                if r.opened_at
            )
            or "none opened yet"
        )
    )
    facts["coordinators"] = f"{data.n_coordinators} coordinator(s) ran the study in the tool"
    facts["draft"] = f"the draft taxonomy put to round 1: {settings['Draft taxonomy']}"
    return facts


def _accord(f: dict[str, str], study: DelphiStudy) -> list[tuple[str, str, str, str, str]]:
    """(section, topic, paraphrase, answer, status) for the 35 ACCORD items, in order.

    The item texts are our own short paraphrases (Gattrell et al. 2024, PLoS Med
    21:e1004326: 1 title, 3 introduction, 21 methods, 5 results, 2 discussion, 3 other);
    check the wording and numbering against the published checklist when submitting.
    """
    m, r = "Methods", "Results"
    tool = PREFILLED
    return [
        ("Title and abstract", "Title", "Say in the title that this is a consensus study and "
         "name the method (e.g. Delphi).", f"Study title in the tool: {study.title!r}; method: "
         f"online modified Delphi ({f['rounds']}). Article title {TO_AUTHORS}.", PARTLY),
        ("Introduction", "Background", "Explain the problem and the evidence gap that called "
         "for a consensus approach.", TO_AUTHORS, TO_AUTHORS),
        ("Introduction", "Rationale for the method", "Explain why a consensus method, and this "
         "one, was chosen.", TO_AUTHORS, TO_AUTHORS),
        ("Introduction", "Aim and scope", "State the aim, the intended users of the result and "
         "its scope.", f"Aims as locked: {_aims(study)}. Users and scope "
         f"{TO_AUTHORS}.", PARTLY),
        (m, "Registration", "Give the registry and number if the study was registered.",
         TO_AUTHORS, TO_AUTHORS),
        (m, "Protocol", "Say where the protocol can be found and report any deviation from it.",
         f"Protocol {f['lock']}; exported as protocol.json. "
         f"{_deviation(study)} "
         f"Where it is published: {TO_AUTHORS}.", PARTLY),
        (m, "Steering committee", "Describe who planned and ran the study, their expertise and "
         "roles.", f"{f['coordinators']}; their roles and expertise {TO_AUTHORS}.", PARTLY),
        (m, "Participant eligibility", "Give the criteria for taking part and the expertise "
         "sought.", TO_AUTHORS, TO_AUTHORS),
        (m, "Recruitment", "Describe how panelists were identified, invited and recruited.",
         f"Invited by e-mail with a one-time personal link; {f['panel']}. How they were "
         f"identified: {TO_AUTHORS}.", PARTLY),
        (m, "Panel size", "Give the number of panelists and how it was decided.",
         f"{f['n_panel']}; how the size was decided {TO_AUTHORS}.", PARTLY),
        (m, "Preparatory work", "Describe any evidence review or preparation behind the first "
         "round.", f"{f['draft']}; how it was developed {TO_AUTHORS}.", PARTLY),
        (m, "Items and questionnaire", "Describe how the items and questions were developed "
         "and piloted.", f"{f['questions']} Piloting {TO_AUTHORS}.", PARTLY),
        (m, "Consensus method", "Name the consensus method and any modification of it.",
         f"Online modified Delphi: anonymous rating rounds with controlled feedback; "
         f"{f['rounds']}.", tool),
        (m, "Consensus definition", "Define consensus and say when (before the rounds) and how "
         "the threshold was set.", f"{f['rule']}. Why this threshold: {TO_AUTHORS}.", PARTLY),
        (m, "Rounds and stopping", "Give the number of rounds planned and the stopping "
         "criteria.", f"{f['stopping']} {f['rounds']}.", tool),
        (m, "Rating", "Describe the rating scale and what panelists were asked.",
         f["questions"], tool),
        (m, "Non-consensus items", "Describe what happened to items without consensus.",
         f"Carry-over (locked): {f['carry_over']}.", tool),
        (m, "New and changed items", "Describe how panelists' new items and proposed changes "
         "were handled.", f"{_cap(f['suggestions'])}.", tool),
        (m, "Feedback", "Describe the feedback panelists received between rounds.",
         f"{_cap(f['feedback'])}.", tool),
        (m, "Anonymity", "Say who knew whose identity and answers.",
         f"{_cap(f['anonymity'])}; the coordinators see pseudonyms and may know the "
         f"invited e-mail addresses ({TO_AUTHORS}: who else).", PARTLY),
        (m, "Administration", "Describe how and when the rounds were run (mode, dates, "
         "reminders).", f"{_cap(f['mode'])}.", tool),
        (m, "Quantitative analysis", "Describe the statistics used to summarise agreement.",
         f"{_cap(f['analysis'])}.", tool),
        (m, "Qualitative analysis", "Describe how free-text comments were analysed.",
         f"Comments exported anonymised (comments.csv); their analysis {TO_AUTHORS}.", PARTLY),
        (m, "Missing answers", "Say how missing answers and non-responders were handled.",
         "Only submitted answers count; panelists who did not submit by the close of a round "
         "are non-responders and their drafts are never counted; 'unable to rate' is in no "
         "denominator; the panel was invited to every round unless they withdrew.", tool),
        (m, "Ethics and consent", "Report ethics approval and how consent was obtained.",
         TO_AUTHORS, TO_AUTHORS),
        (r, "Participation per round", "Give the number invited and responding, and the "
         "response rate, in each round.", f"{f['response']}.", tool),
        (r, "Attrition", "Report attrition between rounds and, if known, its reasons.",
         f"{f['attrition']}. Reasons {TO_AUTHORS}.", PARTLY),
        (r, "Panel description", "Describe the panelists who took part.",
         f"{f['panel']}. Other characteristics {TO_AUTHORS}.", PARTLY),
        (r, "Results per round", "Give the results of each round, including changes to the "
         "items.", f"Outcomes per item: {f['outcomes']} (items.csv, statistics.csv, "
         "changes.csv).", tool),
        (r, "Final outcome", "Present the final consensus and what did not reach it.",
         f"{_cap(f['final'])}; every item's final status in items.csv.", tool),
        ("Discussion", "Interpretation", "Summarise and interpret the findings against other "
         "work.", TO_AUTHORS, TO_AUTHORS),
        ("Discussion", "Strengths and limitations", "Discuss the strengths and limitations of "
         "the process.", TO_AUTHORS, TO_AUTHORS),
        ("Other information", "Funding", "State the funding and the funder's role.",
         TO_AUTHORS, TO_AUTHORS),
        ("Other information", "Conflicts of interest", "Declare the interests of organisers "
         "and panelists.", TO_AUTHORS, TO_AUTHORS),
        ("Other information", "Materials and data", "Say where the questionnaires, data and "
         "other material are available.", "Exports available: protocol.json, flow.csv, "
         "items.csv, changes.csv, comments.csv, raw.csv, statistics.csv, stability.csv; where "
         f"they are shared {TO_AUTHORS}.", PARTLY),
    ]  # fmt: skip


def _credes(f: dict[str, str], study: DelphiStudy) -> list[tuple[str, str, str, str, str]]:
    """(section, topic, paraphrase, answer, status) for the CREDES standards (Jünger et al.
    2017, Palliat Med 31:684), our own short paraphrases, placed in the article's sections."""
    m, r = "Methods", "Results"
    return [
        ("Introduction", "Justification of the Delphi technique", "Say why Delphi suits the "
         "question.", TO_AUTHORS, TO_AUTHORS),
        ("Introduction", "Purpose and rationale", "State the purpose of the study and its "
         "rationale.", f"Aims as locked: {_aims(study)}. Rationale "
         f"{TO_AUTHORS}.", PARTLY),
        (m, "Planning and process", "Plan the rounds and the handling of items between them "
         "in advance.", f"{f['stopping']} Carry-over: {f['carry_over']}. New items: "
         f"{f['suggestions']}.", PREFILLED),
        (m, "Definition of consensus", "Define consensus before the study starts.",
         f"{f['rule']}.", PREFILLED),
        (m, "Informational input", "Describe the material given to the panel and how it was "
         "prepared.", f"{f['draft']}; {f['questions']} Background material {TO_AUTHORS}.",
         PARTLY),
        (m, "Prevention of bias", "Describe how bias from the organisers and between panelists "
         "was limited.", f"{_cap(f['anonymity'])}; the consensus and stopping rules were "
         f"{f['lock']}. Other measures {TO_AUTHORS}.", PARTLY),
        (m, "Interpretation and processing of results", "Describe how results, including "
         "non-consensus, were analysed and fed back.", f"{_cap(f['analysis'])}; "
         f"{f['feedback']}; non-consensus items: {f['carry_over']}.", PREFILLED),
        (m, "External validation", "Report any review of the result outside the panel.",
         TO_AUTHORS, TO_AUTHORS),
        (m, "Expert panel", "Describe the selection and make-up of the panel.",
         f"{f['panel']}. Selection criteria {TO_AUTHORS}.", PARTLY),
        (m, "Description of the methods", "Describe the survey, scale and analysis clearly "
         "enough to repeat them.", f"{f['questions']} {_cap(f['mode'])}.", PREFILLED),
        (r, "Procedure (flow chart)", "Show the rounds and the flow of panelists and items, "
         "e.g. as a flow chart.", f"{f['response']}; participation flow chart and outcomes "
         "per round in the report.", PREFILLED),
        (r, "Definition and attainment of consensus", "Report whether and where consensus "
         "was reached.", f"{f['outcomes']}; {f['final']}.", PREFILLED),
        (r, "Results", "Report the results of each round and of the whole study.",
         f"{f['outcomes']}; response: {f['response']}; attrition: {f['attrition']}.",
         PREFILLED),
        ("Discussion", "Limitations", "Discuss the limitations of the study.", TO_AUTHORS,
         TO_AUTHORS),
        ("Discussion", "Adequacy of conclusions", "Draw only conclusions the results "
         "support.", TO_AUTHORS, TO_AUTHORS),
        ("Other information", "Publication and dissemination", "Describe how the results "
         "will be published and used.", TO_AUTHORS, TO_AUTHORS),
    ]  # fmt: skip


def checklist_items(*, study: DelphiStudy, data: StudyData | None = None) -> list[ChecklistItem]:
    """The ACCORD items (1-35) then the CREDES standards (C1...), each prefilled with what the
    tool knows and marked "to be completed by the authors" where it does not."""
    data = _data(study, data)
    facts = _facts(data)
    items = []
    for guideline, prefix, entries in (
        ("ACCORD", "", _accord(facts, data.study)),
        ("CREDES", "C", _credes(facts, data.study)),
    ):
        for number, (section, topic, text, answer, status) in enumerate(entries, start=1):
            items.append(
                ChecklistItem(
                    guideline=guideline,
                    number=f"{prefix}{number}",
                    section=section,
                    topic=topic,
                    text=text,
                    answer=answer,
                    status=status,
                )
            )
    return items


CHECKLIST_SOURCES = {
    "ACCORD": "ACCORD (ACcurate COnsensus Reporting Document; Gattrell et al. 2024, PLoS Med "
    "21:e1004326), 35 items",
    "CREDES": "CREDES (Guidance on Conducting and REporting DElphi Studies; Jünger et al. "
    "2017, Palliat Med 31:684)",
}
CHECKLIST_NOTE = (
    "Item texts are short paraphrases, not the guidelines' wording; check them against the "
    "published checklists. Answers come from the study as stored in medhelm-studio; nothing "
    f"is filled in that the tool does not know: such parts say '{TO_AUTHORS}'."
)


def grouped_checklist(
    items: Sequence[ChecklistItem],
) -> list[tuple[str, list[tuple[str, list[ChecklistItem]]]]]:
    result = []
    for guideline in CHECKLIST_SOURCES:
        mine = [item for item in items if item.guideline == guideline]
        sections = [
            (section, [item for item in mine if item.section == section])
            for section in CHECKLIST_SECTIONS
        ]
        result.append((guideline, [s for s in sections if s[1]]))
    return result


def checklist_markdown(*, study: DelphiStudy, data: StudyData | None = None) -> str:
    data = _data(study, data)
    items = checklist_items(study=study, data=data)
    lines = [
        f"# Reporting checklist: {data.study.title}",
        "",
        f"Protocol hash (SHA-256): `{data.study.protocol_hash or 'not locked'}`",
        "",
        CHECKLIST_NOTE,
        "",
    ]
    for guideline, sections in grouped_checklist(items):
        lines += [f"## {CHECKLIST_SOURCES[guideline]}", ""]
        for section, entries in sections:
            lines += [f"### {section}", "", "| # | Item | Answer | Status |", "|---|---|---|---|"]
            for item in entries:
                cells = [item.number, f"**{item.topic}**: {item.text}", item.answer, item.status]
                lines.append("| " + " | ".join(_md(c) for c in cells) + " |")
            lines.append("")
    return "\n".join(lines)


def _deviation(study: DelphiStudy) -> str:
    # finish_study records "ended early by the coordinator: ..." when the locked stopping
    # rule was not met: the one deviation from the protocol the tool can see.
    if "ended early" in study.finished_reason:
        return f"Deviation: {study.finished_reason.rstrip('.')}."
    return "No deviation recorded by the tool."


def _aims(study: DelphiStudy) -> str:
    return study.aims.strip().rstrip(".") or "(none given)"


def _cap(text: str) -> str:
    # str.capitalize() would lower-case the rest ("RAND/UCLA" -> "rand/ucla").
    return text[:1].upper() + text[1:]


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def checklist_html(*, study: DelphiStudy, data: StudyData | None = None) -> str:
    """A standalone HTML page of the checklist (the report embeds the same table)."""
    data = _data(study, data)
    body = checklist_html_fragment(checklist_items(study=study, data=data))
    title = html.escape(f"Reporting checklist: {data.study.title}")
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        "<style>body{font:14px/1.45 system-ui,sans-serif;margin:2rem;max-width:70rem}"
        "table{border-collapse:collapse;width:100%;margin:0 0 1rem}"
        "th,td{border:1px solid #ccc;padding:.3rem .5rem;vertical-align:top;text-align:left}"
        ".todo{color:#a35b00}</style></head><body>"
        f"<h1>{title}</h1><p>Protocol hash (SHA-256): <code>"
        f"{html.escape(data.study.protocol_hash or 'not locked')}</code></p>"
        f"{body}</body></html>\n"
    )


def checklist_html_fragment(items: Sequence[ChecklistItem]) -> str:
    parts = [f"<p>{html.escape(CHECKLIST_NOTE)}</p>"]
    for guideline, sections in grouped_checklist(items):
        parts.append(f"<h3>{html.escape(CHECKLIST_SOURCES[guideline])}</h3>")
        for section, entries in sections:
            parts.append(
                f"<h4>{html.escape(section)}</h4><table><thead><tr><th>#</th><th>Item</th>"
                "<th>Answer</th><th>Status</th></tr></thead><tbody>"
            )
            for item in entries:
                css = ' class="todo"' if item.status != PREFILLED else ""
                parts.append(
                    f"<tr><td>{html.escape(item.number)}</td><td><b>{html.escape(item.topic)}"
                    f"</b>: {html.escape(item.text)}</td><td>{html.escape(item.answer)}</td>"
                    f"<td{css}>{html.escape(item.status)}</td></tr>"
                )
            parts.append("</tbody></table>")
    return "".join(parts)


# --------------------------------------------------------------------------- dispatch

CSV = "text/csv; charset=utf-8"


def _csv_export(
    builder: Callable[..., list[dict[str, Any]]],
    columns: Sequence[str] | Callable[[StudyData], list[str]],
) -> Callable[[StudyData], tuple[bytes, str]]:
    def render(data: StudyData) -> tuple[bytes, str]:
        names = columns(data) if callable(columns) else columns
        return rows_to_csv(builder(study=data.study, data=data), names), CSV

    return render


def _protocol_json(data: StudyData) -> tuple[bytes, str]:
    document = protocol_export(study=data.study)
    text = json.dumps(document, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    return text.encode("utf-8"), "application/json"


def _report_html(data: StudyData) -> tuple[bytes, str]:
    from delphi import report  # report imports this module

    return report.render_report_html(study=data.study, data=data).encode("utf-8"), (
        "text/html; charset=utf-8"
    )


def _report_pdf(data: StudyData) -> tuple[bytes, str]:
    from delphi import report

    return report.render_report_pdf(study=data.study, data=data), "application/pdf"


EXPORTS: dict[str, Callable[[StudyData], tuple[bytes, str]]] = {
    "protocol.json": _protocol_json,
    "flow.csv": _csv_export(flow_rows, FLOW_COLUMNS),
    "items.csv": _csv_export(item_rows, item_columns),
    "changes.csv": _csv_export(change_rows, CHANGE_COLUMNS),
    "comments.csv": _csv_export(comment_rows, COMMENT_COLUMNS),
    "raw.csv": _csv_export(raw_rows, RAW_COLUMNS),
    "statistics.csv": _csv_export(statistics_rows, STATISTICS_COLUMNS),
    "stability.csv": _csv_export(stability_rows, STABILITY_COLUMNS),
    "checklist.md": lambda data: (
        checklist_markdown(study=data.study, data=data).encode("utf-8"),
        "text/markdown; charset=utf-8",
    ),
    "checklist.html": lambda data: (
        checklist_html(study=data.study, data=data).encode("utf-8"),
        "text/html; charset=utf-8",
    ),
    "report.html": _report_html,
    "report.pdf": _report_pdf,
}
EXPORT_NAMES: tuple[str, ...] = tuple(EXPORTS)


def render_export(*, study: DelphiStudy, name: str) -> tuple[bytes, str, str]:
    """(content, content type, filename) of one export; ValueError for an unknown name or
    (protocol.json) a protocol that is not locked."""
    if name not in EXPORTS:
        raise ValueError(f"unknown export {name!r}; choose one of {list(EXPORT_NAMES)}")
    content, content_type = EXPORTS[name](load_study_data(study))
    return content, content_type, f"delphi-study-{study.pk}-{name}"


__all__ = [
    "EXPORT_NAMES",
    "NO_GROUP",
    "TO_AUTHORS",
    "WHOLE_PANEL",
    "ChecklistItem",
    "StudyData",
    "change_rows",
    "checklist_html",
    "checklist_items",
    "checklist_markdown",
    "comment_rows",
    "flow_rows",
    "item_rows",
    "load_study_data",
    "protocol_export",
    "raw_rows",
    "render_export",
    "stability_rows",
    "statistics_rows",
]
