"""The one bundle every export and the report read: a study's rows, loaded once.

`load_study_data` runs one query per table whatever the number of items, rounds or
panelists, then links the objects in memory, so no builder queries again. Only counted
answers are kept: submitted answers of panelists whose round is submitted.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from delphi import stats
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

WHOLE_PANEL = "all"  # stored as "" in RoundItemStatistics
NO_GROUP = "(no group)"
# Rounds whose answers are final: stability and the per-round tables only use these.
CLOSED_STATUSES = (Round.Status.CLOSED, Round.Status.ANALYSED, Round.Status.FEEDBACK_RELEASED)


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

    def groups(self) -> list[str]:
        """The stakeholder groups, sorted; none when no panelist has one."""
        groups = sorted({panelist.stakeholder_group or NO_GROUP for panelist in self.panelists})
        return [] if groups in ([], [NO_GROUP]) else groups

    def identities_in_order(self) -> list[str]:
        """Every identity once, in the order it was first put to the panel."""
        return list(dict.fromkeys(str(item.identity) for item in self.items))

    def whole_panel_stats(self, item: RoundItem) -> RoundItemStatistics | None:
        return self.stats_of.get((item.pk, ""))


def load_study_data(study: DelphiStudy) -> StudyData:
    """One query per table, whatever the size of the study; objects are linked in memory."""
    rounds = list(Round.objects.filter(study=study).order_by("number"))
    round_by_pk = {round_.pk: round_ for round_ in rounds}
    items = _items(study, round_by_pk)
    item_by_pk = {item.pk: item for item in items}
    panelists = list(Panelist.objects.filter(study=study).order_by("pseudonym"))
    panelist_by_pk = {panelist.pk: panelist for panelist in panelists}
    entries = _entries(study, round_by_pk, panelist_by_pk)
    data = StudyData(
        study=study,
        document=study.protocol_document,
        rounds=rounds,
        items=items,
        statistics=_statistics(study, item_by_pk),
        panelists=panelists,
        entries=entries,
        responses=_counted_responses(study, entries, item_by_pk, panelist_by_pk),
        suggestions=_suggestions(study, round_by_pk),
        released_nodes=_released_nodes(study),
        n_coordinators=study.coordinators.count(),
        reminders=_reminders(study),
        round_by_pk=round_by_pk,
        item_by_pk=item_by_pk,
        panelist_by_pk=panelist_by_pk,
    )
    _index(data)
    return data


def _items(study: DelphiStudy, round_by_pk: dict[int, Round]) -> list[RoundItem]:
    items = list(
        RoundItem.objects.filter(round__study=study).order_by("round__number", "position", "id")
    )
    for item in items:
        item.round = round_by_pk[item.round_id]
    return items


def _statistics(study: DelphiStudy, item_by_pk: dict[int, RoundItem]) -> list[RoundItemStatistics]:
    statistics = list(
        RoundItemStatistics.objects.filter(round_item__round__study=study).order_by("id")
    )
    for row in statistics:
        row.round_item = item_by_pk[row.round_item_id]
    return statistics


def _entries(
    study: DelphiStudy, round_by_pk: dict[int, Round], panelist_by_pk: dict[int, Panelist]
) -> list[PanelistRound]:
    entries = list(PanelistRound.objects.filter(round__study=study).order_by("round_id", "id"))
    for entry in entries:
        entry.round = round_by_pk[entry.round_id]
        entry.panelist = panelist_by_pk[entry.panelist_id]
    return entries


def _counted_responses(
    study: DelphiStudy,
    entries: list[PanelistRound],
    item_by_pk: dict[int, RoundItem],
    panelist_by_pk: dict[int, Panelist],
) -> list[Response]:
    """Submitted answers of panelists whose round is submitted: drafts and the answers of
    non-responders never count."""
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
    return responses


def _suggestions(study: DelphiStudy, round_by_pk: dict[int, Round]) -> list[Suggestion]:
    suggestions = list(
        Suggestion.objects.filter(round__study=study).order_by("round__number", "id")
    )
    for suggestion in suggestions:
        suggestion.round = round_by_pk[suggestion.round_id]
    return suggestions


def _released_nodes(study: DelphiStudy) -> list[TaxonomyNode]:
    if not study.released_taxonomy_id:
        return []
    return list(study.released_taxonomy.nodes.order_by("position", "id"))


def _reminders(study: DelphiStudy) -> Counter[int]:
    """Round number -> reminder batches sent, from the audit trail ("round 2" targets)."""
    targets = DelphiAuditEvent.objects.filter(study=study, action="round.remind").values_list(
        "target", flat=True
    )
    return Counter(
        int(target.removeprefix("round "))
        for target in targets
        if target.removeprefix("round ").isdigit()
    )


def _index(data: StudyData) -> None:
    data.items_of_round = {round_.number: [] for round_ in data.rounds}
    for item in data.items:
        data.items_of_round[item.round.number].append(item)
        data.item_at[(item.round.number, str(item.identity))] = item
    data.stats_of = {(row.round_item_id, row.group): row for row in data.statistics}


__all__ = [
    "CLOSED_STATUSES",
    "NO_GROUP",
    "WHOLE_PANEL",
    "StudyData",
    "load_study_data",
]
