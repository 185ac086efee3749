"""The tables of a Delphi study's exports that follow the panel and its answers: flow.csv,
comments.csv, raw.csv, statistics.csv and stability.csv.

Each builder reads one `StudyData` and queries nothing. Panelists appear by pseudonym
only; free text (comments, reasons given outside the IQR) never carries one and is sorted
so its order says nothing about who wrote it, so it is not in raw.csv, where every row has
a pseudonym. The whole panel is the group "all"; panelists without a group "(no group)".
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from typing import Any

from delphi import stats
from delphi.exports.data import CLOSED_STATUSES, WHOLE_PANEL, StudyData
from delphi.models import PanelistRound, Round, RoundItemStatistics

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
COMMENT_COLUMNS = ["round", "item_identity", "item", "item_version", "kind", "text"]
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


def _pct(part: int, whole: int) -> float | None:
    return 100.0 * part / whole if whole else None


# --------------------------------------------------------------------------- flow


def flow_rows(data: StudyData) -> list[dict[str, Any]]:
    """Per round and group (the whole panel first): who was invited, submitted, did not
    respond, withdrew, is still pending (open round), the response rate (submitted /
    invited) and attrition: the share of round-1 respondents who did not submit this round.
    A round still open has no attrition yet (None): its panelists can still submit."""
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
        for group in [WHOLE_PANEL, *data.groups()]:
            rows.append(_flow_row(data, round_, group, entries, first))
    return rows


def _flow_row(
    data: StudyData, round_: Round, group: str, entries: list[PanelistRound], first: set[int]
) -> dict[str, Any]:
    def in_group(panelist_id: int) -> bool:
        return group == WHOLE_PANEL or data.group_of(panelist_id) == group

    mine = [entry for entry in entries if in_group(entry.panelist_id)]
    status = Counter(entry.status for entry in mine)
    submitted = {e.panelist_id for e in mine if e.status == PanelistRound.Status.SUBMITTED}
    baseline = {pk for pk in first if in_group(pk)}
    retained = len(baseline & submitted)
    still_open = round_.status == Round.Status.OPEN
    return {
        "round": round_.number,
        "round_status": round_.status,
        "group": group,
        "invited": len(mine),
        "submitted": len(submitted),
        "pending": status[PanelistRound.Status.INVITED] + status[PanelistRound.Status.STARTED],
        "non_responders": status[PanelistRound.Status.NON_RESPONDER],
        "withdrawn": status[PanelistRound.Status.WITHDRAWN],
        "response_rate_pct": _pct(len(submitted), len(mine)),
        "round_1_respondents": len(baseline),
        "retained_from_round_1": retained,
        "attrition_vs_round_1_pct": None
        if still_open
        else _pct(len(baseline) - retained, len(baseline)),
    }


# --------------------------------------------------------------------------- comments, raw


def comment_rows(data: StudyData) -> list[dict[str, Any]]:
    """Every comment and every reason given for a rating outside the IQR, without who wrote
    it, sorted by round, item and text (never by panelist or time of writing)."""
    found = []
    for response in data.responses:
        item = response.round_item
        for kind, text in (
            ("comment", response.comment),
            ("reason outside IQR", response.reason_outside_iqr),
        ):
            if text.strip():
                row = {
                    "round": item.round.number,
                    "item_identity": str(item.identity),
                    "item": item.name,
                    "item_version": item.item_version,
                    "kind": kind,
                    "text": text.strip(),
                }
                found.append((item.position, row))
    found.sort(
        key=lambda pair: (
            pair[1]["round"],
            pair[0],
            pair[1]["item_identity"],
            pair[1]["kind"],
            pair[1]["text"],
        )
    )
    return [row for _position, row in found]


def raw_rows(data: StudyData) -> list[dict[str, Any]]:
    """Long format, one row per counted answer (record "item") and one per panelist-round
    with a comprehensiveness score (record "comprehensiveness", 1-5). Pseudonyms only; no
    free text (see the module docstring)."""
    category_name = {
        (item.round.number, str(item.identity)): item.name
        for item in data.items
        if item.kind == "category"
    }
    rows = []
    for response in data.responses:
        item = response.round_item
        choice = str(response.placement_choice) if response.placement_choice else ""
        order = (item.round.number, response.panelist.pseudonym, 0, item.position)
        row = {
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
        }
        rows.append((order, row))
    for entry in data.entries:
        if entry.status == PanelistRound.Status.SUBMITTED and entry.comprehensiveness is not None:
            order = (entry.round.number, entry.panelist.pseudonym, 1, 0)
            row = {
                "round": entry.round.number,
                "panelist": entry.panelist.pseudonym,
                "stakeholder_group": entry.panelist.stakeholder_group,
                "record": "comprehensiveness",
                "comprehensiveness": entry.comprehensiveness,
            }
            rows.append((order, row))
    rows.sort(key=lambda pair: pair[0])
    return [row for _order, row in rows]


# --------------------------------------------------------------------------- statistics


def statistics_rows(data: StudyData) -> list[dict[str, Any]]:
    """Every stored statistics row, whole panel ("all") and per group ("withheld" rows for
    groups below the locked minimum), with the quantile method used for Q1/Q3/P30/P70."""
    method = stats.describe_quantile_method(data.quantile_method)
    ordered = sorted(
        data.statistics,
        key=lambda r: (r.round_item.round.number, r.round_item.position, r.group != "", r.group),
    )
    return [_statistics_row(row, method) for row in ordered]


def _statistics_row(row: RoundItemStatistics, method: str) -> dict[str, Any]:
    item = row.round_item
    counts = row.counts or {}
    return {
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


# --------------------------------------------------------------------------- stability


def stability_method() -> str:
    return (
        f"{stats.describe_wilcoxon()}; quadratic weighted kappa (Cohen 1968) on the 1-9 scale; "
        "panelists paired on their submitted ratings, unable-to-rate left out; only items "
        "with the same item version in both rounds (a reworded item is a new question)"
    )


def stability_rows(data: StudyData) -> list[dict[str, Any]]:
    """Per item and consecutive pair of closed rounds in which it had the same item version:
    how the paired panelists' ratings moved (delphi.stats.rating_stability)."""
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


__all__ = [
    "COMMENT_COLUMNS",
    "FLOW_COLUMNS",
    "RAW_COLUMNS",
    "STABILITY_COLUMNS",
    "STATISTICS_COLUMNS",
    "comment_rows",
    "flow_rows",
    "raw_rows",
    "stability_method",
    "stability_rows",
    "statistics_rows",
]
