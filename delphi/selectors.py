"""Reads for taxonomies and Delphi studies."""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from delphi.models import (
    DelphiStudy,
    Panelist,
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


def delphi_studies_on_panel_of(*, user: AbstractBaseUser) -> QuerySet[DelphiStudy]:
    return DelphiStudy.objects.filter(
        panelists__user=user, panelists__withdrawn_at__isnull=True
    ).order_by("-created_at")


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


def questionnaire(*, panelist: Panelist, round_: Round) -> list[QuestionnaireItem]:
    """Every item of the round as one panelist sees it: the wording and what changed, the
    group's answers of the round before (if its feedback was released), their own previous
    answer (to them alone), the anonymous comments, and their saved answer."""
    previous = (
        round_.study.rounds.filter(
            number=round_.number - 1, status=Round.Status.FEEDBACK_RELEASED
        ).first()
        if round_.number > 1
        else None
    )
    before: dict[uuid.UUID, RoundItem] = {}
    stats_before: dict[uuid.UUID, RoundItemStatistics] = {}
    own_before: dict[uuid.UUID, Response] = {}
    comments: dict[uuid.UUID, list[str]] = defaultdict(list)
    if previous is not None:
        before = {item.identity: item for item in previous.items.all()}
        for row in RoundItemStatistics.objects.filter(
            round_item__round=previous, group=""
        ).select_related("round_item"):
            stats_before[row.round_item.identity] = row
        for response in Response.objects.filter(
            round_item__round=previous, is_draft=False
        ).select_related("round_item"):
            identity = response.round_item.identity
            if response.panelist_id == panelist.pk:
                own_before[identity] = response
            if response.comment:
                comments[identity].append(response.comment)
    mine = {
        response.round_item_id: response
        for response in Response.objects.filter(panelist=panelist, round_item__round=round_)
    }
    result = []
    for item in round_.items.order_by("position", "id"):
        old = before.get(item.identity)
        changed = old is not None and old.item_version != item.item_version
        feedback = None
        if item.identity in stats_before:
            own = own_before.get(item.identity)
            feedback = ItemFeedback(
                round_number=previous.number,
                statistics=stats_before[item.identity],
                own_rating=own.rating if own else None,
                own_unable=bool(own and own.unable_to_rate),
                # Sorted by text, so the order says nothing about who wrote what.
                comments=sorted(comments.get(item.identity, [])),
            )
        result.append(
            QuestionnaireItem(
                item=item,
                previous_name=old.name if changed and old.name != item.name else "",
                previous_description=old.description
                if changed and old.description != item.description
                else "",
                feedback=feedback,
                response=mine.get(item.pk),
            )
        )
    return result
