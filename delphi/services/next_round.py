"""Drafting the next round from the last one: the plan is `delphi.suggestions`' (pure), the
writes are here."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from delphi import consensus, suggestions
from delphi.audit import record
from delphi.errors import DelphiError
from delphi.models import DelphiStudy, Round, RoundItem, RoundItemStatistics, Suggestion
from delphi.services.round_state import require_status


@transaction.atomic
def start_next_round(*, study: DelphiStudy, actor: AbstractBaseUser) -> Round:
    """Draft the next round: unresolved items (or all, per the carry-over policy), every item
    an accepted suggestion changed (as a new item version), and the items panelists added."""
    study = DelphiStudy.objects.select_for_update().get(pk=study.pk)
    previous = study.rounds.order_by("-number").first()
    if previous is None:
        raise DelphiError("lock the protocol first: it drafts round 1")
    require_status(previous, Round.Status.FEEDBACK_RELEASED, doing="build on")
    _refuse_when_stopped(previous)
    pending = previous.suggestions.filter(status=Suggestion.Status.PENDING).count()
    if pending:
        raise DelphiError(
            f"triage the {pending} pending suggestion(s) of round {previous.number} first"
        )
    plan = suggestions.apply_suggestions(
        [_item(item) for item in previous.items.order_by("position", "id")],
        previous.suggestions.filter(status=Suggestion.Status.ACCEPTED).order_by("id"),
    )
    items = plan.to_rate(
        resolved=_resolved_identities(previous),
        keep_resolved=study.carry_over == DelphiStudy.CarryOver.RERATE_ALL,
    )
    if not items:
        raise DelphiError(
            f"no item is left to rate after round {previous.number}: every item reached "
            "consensus or was removed; finish the study"
        )
    next_round = Round.objects.create(study=study, number=previous.number + 1)
    RoundItem.objects.bulk_create(
        [_round_item(next_round, position, item) for position, item in enumerate(items)]
    )
    record(
        study=study,
        actor=actor,
        action="round.draft",
        target=f"round {next_round.number}",
        after={"items": len(items), "removed": sorted(plan.removed), "added": len(plan.added)},
    )
    return next_round


def _refuse_when_stopped(previous: Round) -> None:
    # "All resolved" and "stability" judge the items that were rated; an accepted suggestion
    # that adds or rewords an item gives the panel something it has not rated yet, so only
    # the maximum number of rounds stops the study then.
    decision = previous.stopping_decision or {}
    if not decision.get("stop"):
        return
    rewording = previous.suggestions.filter(status=Suggestion.Status.ACCEPTED).exclude(
        kind=Suggestion.Kind.DELETE
    )
    if "max_rounds" in decision.get("criteria_met", []) or not rewording.exists():
        raise DelphiError(
            "the locked stopping rule is met ("
            + "; ".join(decision["reasons"])
            + "): finish the study instead of starting another round"
        )


def _resolved_identities(round_: Round) -> set[str]:
    """Identities whose whole-panel outcome in the round was consensus in or out."""
    return {
        str(identity)
        for identity, outcome in RoundItemStatistics.objects.filter(
            round_item__round=round_, group=""
        ).values_list("round_item__identity", "outcome")
        if outcome in consensus.RESOLVED_OUTCOMES
    }


def _item(item: RoundItem) -> suggestions.Item:
    return suggestions.Item(
        identity=item.identity,
        kind=item.kind,
        parent_identity=item.parent_identity,
        name=item.name,
        description=item.description,
        item_version=item.item_version,
    )


def _round_item(round_: Round, position: int, item: suggestions.PlannedItem) -> RoundItem:
    return RoundItem(
        round=round_,
        identity=item.identity,
        item_version=item.item_version,
        kind=item.kind,
        parent_identity=item.parent_identity,
        position=position,
        name=item.name,
        description=item.description,
        change_note=item.change_note,
    )
