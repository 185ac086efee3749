"""Reads for taxonomies and Delphi studies."""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Max, Q, QuerySet

from delphi.models import (
    DelphiStudy,
    Panelist,
    PanelistRound,
    Response,
    Round,
    RoundItem,
    RoundItemStatistics,
    Suggestion,
    TaxonomyNode,
    TaxonomyVersion,
)


def delphi_studies_coordinated_by(*, user: AbstractBaseUser) -> QuerySet[DelphiStudy]:
    return DelphiStudy.objects.filter(coordinators__user=user).order_by("-created_at")


@dataclass(frozen=True)
class PanelSeat:
    """A panel the user sits on, as their home page lists it: the round to answer now (an
    open round they are on and have not submitted) or the latest round's state."""

    study: DelphiStudy
    round: Round | None
    entry: PanelistRound | None
    answered: int  # items with a rating or "unable to rate" in their draft
    total: int

    @property
    def waiting(self) -> bool:
        return (
            self.round is not None
            and self.round.status == Round.Status.OPEN
            and self.entry is not None
            and self.entry.status in (PanelistRound.Status.INVITED, PanelistRound.Status.STARTED)
        )


def panel_seats_of(*, user: AbstractBaseUser) -> list[PanelSeat]:
    """Every panel the user sits on (not withdrawn), waiting rounds first."""
    seats = []
    panelists = Panelist.objects.filter(user=user, withdrawn_at__isnull=True).select_related(
        "study"
    )
    for panelist in panelists.order_by("-study__created_at"):
        round_ = current_round_for_panel(study=panelist.study)
        entry = panelist_round(panelist=panelist, round_=round_)
        answered = total = 0
        if round_ is not None and entry is not None:
            total = round_.items.count()
            answered = (
                Response.objects.filter(panelist=panelist, round_item__round=round_)
                .filter(Q(rating__isnull=False) | Q(unable_to_rate=True))
                .count()
            )
        seats.append(
            PanelSeat(
                study=panelist.study, round=round_, entry=entry, answered=answered, total=total
            )
        )
    return sorted(seats, key=lambda seat: not seat.waiting)


def nodes_of_kind(*, version: TaxonomyVersion, kind: str) -> QuerySet[TaxonomyNode]:
    return (
        version.nodes.filter(kind=kind)
        .select_related("parent")
        .order_by("parent__position", "position")
    )


def category_of(node: TaxonomyNode) -> TaxonomyNode:
    """The category a node sits under (itself, for a category). Walks at most two parents."""
    while node.parent_id is not None:
        node = node.parent
    return node


# --------------------------------------------------------------------------- panel pages


@dataclass(frozen=True)
class ItemFeedback:
    """What the panel said about an item in the round before, as fed back to a panelist."""

    round_number: int
    statistics: RoundItemStatistics
    own_rating: int | None
    own_unable: bool
    comments: list[str]  # anonymous, in a fixed order that does not follow the panelists


@dataclass(frozen=True)
class QuestionnaireItem:
    item: RoundItem
    previous_name: str  # the wording of the version rated in the round before ("" if same/new)
    previous_description: str
    feedback: ItemFeedback | None
    response: Response | None


def panelist_of(*, study: DelphiStudy, user: AbstractBaseUser) -> Panelist | None:
    if not user.is_authenticated:
        return None
    return study.panelists.filter(user=user).first()


def current_round_for_panel(*, study: DelphiStudy) -> Round | None:
    """The open round, else the latest one (for a panelist coming back after it closed)."""
    return (
        study.rounds.filter(status=Round.Status.OPEN).first()
        or study.rounds.exclude(status=Round.Status.DRAFT).order_by("-number").first()
    )


def placement_categories(*, round_: Round) -> dict[uuid.UUID, str]:
    """The categories a panelist may place an item under in this round (identity -> name), in
    taxonomy order: the draft's categories and those added in the rounds so far, by their
    latest wording, less those an accepted suggestion deleted or merged away.

    Not only the round's own category items: with "drop resolved" a category that reached
    consensus is no longer put to the panel but is still where subcategories belong, and a
    study may not rate categories at all.
    """
    study = round_.study
    categories: dict[uuid.UUID, str] = {
        node.identity: node.name
        for node in study.draft_taxonomy.nodes.filter(kind="category").order_by("position", "id")
    }
    for identity, name in (
        RoundItem.objects.filter(
            round__study=study, round__number__lte=round_.number, kind="category"
        )
        .order_by("round__number", "position", "id")
        .values_list("identity", "name")
    ):
        categories[identity] = name
    removed = Suggestion.objects.filter(
        round__study=study,
        round__number__lt=round_.number,
        status=Suggestion.Status.ACCEPTED,
        kind__in=[Suggestion.Kind.DELETE, Suggestion.Kind.MERGE],
    ).values_list("target_identity", flat=True)
    for identity in removed:
        categories.pop(identity, None)
    return categories


@dataclass
class _PreviousRound:
    """What the panel said in the round before, by node identity, for the feedback."""

    number: int = 0
    items: dict[uuid.UUID, RoundItem] = field(default_factory=dict)
    statistics: dict[uuid.UUID, RoundItemStatistics] = field(default_factory=dict)
    own: dict[uuid.UUID, Response] = field(default_factory=dict)
    comments: dict[uuid.UUID, list[str]] = field(default_factory=lambda: defaultdict(list))

    def feedback(self, identity: uuid.UUID) -> ItemFeedback | None:
        if identity not in self.statistics:
            return None
        own = self.own.get(identity)
        return ItemFeedback(
            round_number=self.number,
            statistics=self.statistics[identity],
            own_rating=own.rating if own else None,
            own_unable=bool(own and own.unable_to_rate),
            # Sorted by text, so the order says nothing about who wrote what.
            comments=sorted(self.comments.get(identity, [])),
        )


def _previous_round(*, panelist: Panelist, round_: Round) -> _PreviousRound:
    """The round before, if its feedback was released (else nothing to feed back)."""
    previous = (
        round_.study.rounds.filter(
            number=round_.number - 1, status=Round.Status.FEEDBACK_RELEASED
        ).first()
        if round_.number > 1
        else None
    )
    if previous is None:
        return _PreviousRound()
    before = _PreviousRound(
        number=previous.number, items={item.identity: item for item in previous.items.all()}
    )
    for row in RoundItemStatistics.objects.filter(
        round_item__round=previous, group=""
    ).select_related("round_item"):
        before.statistics[row.round_item.identity] = row
    for response in Response.objects.filter(
        round_item__round=previous, is_draft=False
    ).select_related("round_item"):
        identity = response.round_item.identity
        if response.panelist_id == panelist.pk:
            before.own[identity] = response
        if response.comment:
            before.comments[identity].append(response.comment)
    return before


def questionnaire(*, panelist: Panelist, round_: Round) -> list[QuestionnaireItem]:
    """Every item of the round as one panelist sees it: the wording and what changed, the
    group's answers of the round before (if its feedback was released), their own previous
    answer (to them alone), the anonymous comments, and their saved answer."""
    before = _previous_round(panelist=panelist, round_=round_)
    mine = {
        response.round_item_id: response
        for response in Response.objects.filter(panelist=panelist, round_item__round=round_)
    }
    result = []
    for item in round_.items.order_by("position", "id"):
        old = before.items.get(item.identity)
        changed = old is not None and old.item_version != item.item_version
        result.append(
            QuestionnaireItem(
                item=item,
                previous_name=old.name if changed and old.name != item.name else "",
                previous_description=old.description
                if changed and old.description != item.description
                else "",
                feedback=before.feedback(item.identity),
                response=mine.get(item.pk),
            )
        )
    return result


def panelist_round(*, panelist: Panelist, round_: Round | None) -> PanelistRound | None:
    """The panelist's entry in a round (None when they are not on its list)."""
    if round_ is None:
        return None
    return PanelistRound.objects.filter(panelist=panelist, round=round_).first()


def names_by_identity(*, round_: Round) -> dict[uuid.UUID, str]:
    """The name of every node an item of this round may point at (its parent, a category):
    the draft taxonomy first, then the wording of the latest round that put it to the panel,
    because a parent may not be rated (rate_kinds) or may have left after consensus."""
    names = dict(round_.study.draft_taxonomy.nodes.values_list("identity", "name"))
    for identity, name in (
        RoundItem.objects.filter(round__study=round_.study, round__number__lte=round_.number)
        .order_by("round__number", "id")
        .values_list("identity", "name")
    ):
        names[identity] = name
    return names


def answered_item_ids(*, panelist: Panelist, round_: Round) -> set[int]:
    """The round items this panelist has a response row for (draft or submitted)."""
    return set(
        Response.objects.filter(panelist=panelist, round_item__round=round_).values_list(
            "round_item_id", flat=True
        )
    )


def draft_version_ms(*, panelist: Panelist, round_: Round) -> int:
    """The server's version of this panelist's draft: when a response of theirs last changed.
    The page's localStorage copy is tied to it (see questionnaire.js)."""
    latest = Response.objects.filter(panelist=panelist, round_item__round=round_).aggregate(
        latest=Max("updated_at")
    )["latest"]
    return int(latest.timestamp() * 1000) if latest else 0


def own_suggestions(*, panelist: Panelist, round_: Round) -> QuerySet[Suggestion]:
    return panelist.suggestions.filter(round=round_).order_by("created_at", "id")


# --------------------------------------------------------------------------- coordinator pages


@dataclass
class RoundSummary:
    round: Round
    items: int
    invited: int  # panelists asked in this round, excluding those who withdrew
    submitted: int
    outcomes: dict[str, int] = field(default_factory=dict)

    @property
    def response_rate(self) -> int | None:
        return round(100 * self.submitted / self.invited) if self.invited else None


def round_summaries(*, study: DelphiStudy) -> list[RoundSummary]:
    """Every round of the study with its item count, response rate and outcomes."""
    rounds = list(study.rounds.order_by("number"))
    statuses: dict[int, Counter[str]] = defaultdict(Counter)
    for round_id, status in PanelistRound.objects.filter(round__study=study).values_list(
        "round_id", "status"
    ):
        statuses[round_id][status] += 1
    items = Counter(RoundItem.objects.filter(round__study=study).values_list("round_id", flat=True))
    outcomes: dict[int, Counter[str]] = defaultdict(Counter)
    for round_id, outcome in RoundItemStatistics.objects.filter(
        round_item__round__study=study, group=""
    ).values_list("round_item__round_id", "outcome"):
        outcomes[round_id][outcome] += 1
    summaries = []
    for round_ in rounds:
        counted = statuses[round_.pk]
        summaries.append(
            RoundSummary(
                round=round_,
                items=items[round_.pk],
                invited=sum(counted.values()) - counted[PanelistRound.Status.WITHDRAWN],
                submitted=counted[PanelistRound.Status.SUBMITTED],
                outcomes={k.replace("_", " "): v for k, v in sorted(outcomes[round_.pk].items())},
            )
        )
    return summaries


def panel_counts(*, study: DelphiStudy) -> dict[str, int]:
    """How many panelists were invited, joined, have not joined yet, withdrew."""
    panelists = list(study.panelists.values_list("user_id", "withdrawn_at"))
    return {
        "invited": len(panelists),
        "joined": sum(1 for user, gone in panelists if user is not None and gone is None),
        "not_joined": sum(1 for user, gone in panelists if user is None and gone is None),
        "withdrawn": sum(1 for _, gone in panelists if gone is not None),
    }


@dataclass(frozen=True)
class PanelTable:
    rounds: list[Round]
    rows: list[dict]  # {"panelist": Panelist, "rounds": [PanelistRound | None per round]}


def panel_table(*, study: DelphiStudy) -> PanelTable:
    """Each panelist (by pseudonym) with their status in every round."""
    rounds = list(study.rounds.order_by("number"))
    status_of = {
        (entry.panelist_id, entry.round_id): entry
        for entry in PanelistRound.objects.filter(round__study=study)
    }
    rows = [
        {"panelist": p, "rounds": [status_of.get((p.pk, r.pk)) for r in rounds]}
        for p in study.panelists.order_by("pseudonym")
    ]
    return PanelTable(rounds=rounds, rows=rows)


@dataclass
class StatisticsRow:
    item: RoundItem
    whole: RoundItemStatistics | None
    groups: list[RoundItemStatistics | None]


@dataclass(frozen=True)
class RoundStatistics:
    groups: list[str]  # the stakeholder groups with statistics, sorted
    rows: list[StatisticsRow]


def round_statistics(*, round_: Round) -> RoundStatistics:
    """Every item of the round with the whole panel's statistics and each group's."""
    by_item: dict[int, dict[str, RoundItemStatistics]] = defaultdict(dict)
    for row in RoundItemStatistics.objects.filter(round_item__round=round_):
        row.outcome_label = row.outcome.replace("_", " ")  # "consensus_in" -> "consensus in"
        by_item[row.round_item_id][row.group] = row
    groups = sorted({g for rows in by_item.values() for g in rows if g})
    rows = [
        StatisticsRow(
            item=item,
            whole=by_item[item.pk].get(""),
            groups=[by_item[item.pk].get(g) for g in groups],
        )
        for item in round_.items.order_by("position", "id")
    ]
    return RoundStatistics(groups=groups, rows=rows)
