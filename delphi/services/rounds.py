"""Running rounds: open, remind, close, analyse, triage, feed back, carry over, finish, release."""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from delphi import consensus, stats
from delphi.audit import record
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
from delphi.errors import DelphiError
from delphi.services.setup import renew_invitation

ACTIVE_STATUSES = (PanelistRound.Status.INVITED, PanelistRound.Status.STARTED)


def _locked_round(round_: Round) -> Round:
    return Round.objects.select_for_update().select_related("study").get(pk=round_.pk)


def _require_status(round_: Round, *allowed: str, doing: str) -> None:
    if round_.status not in allowed:
        wanted = " or ".join(Round.Status(s).label.lower() for s in allowed)
        raise DelphiError(
            f"cannot {doing} round {round_.number}: it is "
            f"{round_.get_status_display().lower()}, not {wanted}"
        )


def _round_link(round_: Round, base_url: str) -> str:
    return f"{base_url.rstrip('/')}/delphi/{round_.study_id}/round/"


# --------------------------------------------------------------------------- open / close


@transaction.atomic
def open_round(
    *,
    round_: Round,
    actor: AbstractBaseUser,
    base_url: str,
    closes_at: datetime | None = None,
) -> Round:
    """Open a drafted round to every panelist who has not withdrawn, and tell those who joined."""
    round_ = _locked_round(round_)
    _require_status(round_, Round.Status.DRAFT, doing="open")
    study = DelphiStudy.objects.select_for_update().get(pk=round_.study_id)
    if study.status not in (DelphiStudy.Status.LOCKED, DelphiStudy.Status.RUNNING):
        raise DelphiError(f"cannot open a round while the study is {study.get_status_display()}")
    if round_.number > 1:
        before = study.rounds.get(number=round_.number - 1)
        if before.status != Round.Status.FEEDBACK_RELEASED:
            raise DelphiError(
                f"release the feedback of round {before.number} before opening round "
                f"{round_.number}: panelists rate again in the light of it"
            )
    panelists = list(study.panelists.filter(withdrawn_at__isnull=True))
    if not panelists:
        raise DelphiError("invite the panel before opening a round")
    if not round_.items.exists():
        raise DelphiError(f"round {round_.number} has no items")
    PanelistRound.objects.bulk_create(
        [PanelistRound(panelist=p, round=round_) for p in panelists], ignore_conflicts=True
    )
    round_.status = Round.Status.OPEN
    round_.opened_at = timezone.now()
    round_.closes_at = closes_at
    round_.save(update_fields=["status", "opened_at", "closes_at"])
    if study.status == DelphiStudy.Status.LOCKED:
        study.status = DelphiStudy.Status.RUNNING
        study.save(update_fields=["status"])
    record(study=study, actor=actor, action="round.open", target=f"round {round_.number}",
           after={"panelists": len(panelists), "closes_at": closes_at.isoformat() if closes_at else None})  # fmt: skip
    joined = [p for p in panelists if p.user_id is not None]
    link = _round_link(round_, base_url)
    deadline = f" It closes on {closes_at:%Y-%m-%d %H:%M} UTC." if closes_at else ""

    def notify() -> None:
        for panelist in joined:
            send_mail(
                f"Round {round_.number} of {study.title!r} is open",
                f"Dear panelist {panelist.pseudonym},\n\nround {round_.number} is open.{deadline}"
                f"\n\nYour answers save as you go:\n{link}\n",
                None,
                [panelist.email],
            )

    transaction.on_commit(notify)
    return round_


@transaction.atomic
def send_reminders(*, round_: Round, actor: AbstractBaseUser, base_url: str) -> int:
    """Remind everyone who has not submitted the open round; returns how many were reminded.
    Panelists who never joined get a fresh one-time link (the old one stops working)."""
    round_ = _locked_round(round_)
    _require_status(round_, Round.Status.OPEN, doing="send reminders for")
    entries = list(
        round_.panelist_rounds.select_related("panelist")
        .filter(status__in=ACTIVE_STATUSES, panelist__withdrawn_at__isnull=True)
        .select_for_update(of=("self",))
    )
    link = _round_link(round_, base_url)
    now = timezone.now()
    to_mail: list[Panelist] = []
    for entry in entries:
        if entry.panelist.user_id is None:
            renew_invitation(panelist=entry.panelist, actor=actor, base_url=base_url, reminder=True)
        else:
            to_mail.append(entry.panelist)
        entry.last_reminded_at = now
        entry.save(update_fields=["last_reminded_at"])
    record(study=round_.study, actor=actor, action="round.remind",
           target=f"round {round_.number}", after={"reminded": [e.panelist.pseudonym for e in entries]})  # fmt: skip

    def notify() -> None:
        for panelist in to_mail:
            send_mail(
                f"Reminder: round {round_.number} of {round_.study.title!r}",
                f"Dear panelist {panelist.pseudonym},\n\nyour answers to round {round_.number} "
                f"are not submitted yet. What you saved is kept:\n{link}\n",
                None,
                [panelist.email],
            )

    transaction.on_commit(notify)
    return len(entries)


@transaction.atomic
def close_round(*, round_: Round, actor: AbstractBaseUser) -> Round:
    """Close the round: those who did not submit become non-responders (their drafts are kept
    but never counted)."""
    round_ = _locked_round(round_)
    _require_status(round_, Round.Status.OPEN, doing="close")
    non_responders = round_.panelist_rounds.filter(status__in=ACTIVE_STATUSES).update(
        status=PanelistRound.Status.NON_RESPONDER
    )
    round_.status = Round.Status.CLOSED
    round_.closed_at = timezone.now()
    round_.save(update_fields=["status", "closed_at"])
    submitted = round_.panelist_rounds.filter(status=PanelistRound.Status.SUBMITTED).count()
    record(study=round_.study, actor=actor, action="round.close", target=f"round {round_.number}",
           after={"submitted": submitted, "non_responders": non_responders})  # fmt: skip
    return round_


# --------------------------------------------------------------------------- analysis


def _protocol(study: DelphiStudy) -> dict[str, Any]:
    if study.protocol_document is None:
        raise DelphiError("the protocol is not locked")
    return study.protocol_document


@transaction.atomic
def analyse_round(*, round_: Round, actor: AbstractBaseUser) -> Round:
    """Compute and store every item's statistics (whole panel and per stakeholder group) and
    outcome under the locked rule, and evaluate the stopping rule."""
    round_ = _locked_round(round_)
    _require_status(round_, Round.Status.CLOSED, doing="analyse")
    study = round_.study
    document = _protocol(study)
    rule = consensus.rule_from_dict(document["consensus_rule"])
    method = document["statistics"]["quantile_method"]
    min_group = document["statistics"]["min_group_raters"]

    invited = list(
        round_.panelist_rounds.exclude(status=PanelistRound.Status.WITHDRAWN).select_related(
            "panelist"
        )
    )
    group_of = {entry.panelist_id: entry.panelist.stakeholder_group for entry in invited}
    invited_by_group: dict[str, int] = defaultdict(int)
    for group in group_of.values():
        if group:
            invited_by_group[group] += 1
    submitted = {e.panelist_id for e in invited if e.status == PanelistRound.Status.SUBMITTED}
    answers: dict[int, list[tuple[int, int | None]]] = defaultdict(list)
    for response in Response.objects.filter(
        round_item__round=round_, panelist_id__in=submitted, is_draft=False
    ).only("round_item_id", "panelist_id", "rating", "unable_to_rate"):
        if response.rating is not None or response.unable_to_rate:
            answers[response.round_item_id].append((response.panelist_id, response.rating))

    RoundItemStatistics.objects.filter(round_item__round=round_).delete()
    rows: list[RoundItemStatistics] = []
    outcomes: dict[str, str] = {}
    for item in round_.items.all():
        item_answers = answers.get(item.pk, [])
        overall = stats.item_statistics(
            [rating for _, rating in item_answers], n_invited=len(invited), quantile_method=method
        )
        outcome = consensus.evaluate_consensus(rule, overall)
        outcomes[str(item.identity)] = str(outcome)
        rows.append(
            RoundItemStatistics(
                round_item=item, group="", **{**overall.as_model_fields(), "outcome": outcome}
            )
        )
        by_group: dict[str, list[int | None]] = {group: [] for group in invited_by_group}
        for panelist_id, rating in item_answers:
            if group_of.get(panelist_id):
                by_group[group_of[panelist_id]].append(rating)
        grouped = stats.group_item_statistics(
            by_group, n_invited_by_group=dict(invited_by_group), min_raters=min_group,
            quantile_method=method,
        )  # fmt: skip
        for group, result in grouped.items():
            if isinstance(result, stats.WithheldStatistics):
                rows.append(
                    RoundItemStatistics(
                        round_item=item, group=group, n_invited=invited_by_group[group],
                        n_rated=0, n_unable=0, counts={}, outcome="withheld",
                        median=None, q1=None, q3=None, iqr=None, mean=None, sd=None,
                        pct_low=None, pct_mid=None, pct_high=None, p30=None, p70=None,
                        ipr=None, ai=None, ipras=None, disagreement=None,
                    )
                )  # fmt: skip
            else:
                fields = result.as_model_fields()
                fields["outcome"] = consensus.evaluate_consensus(rule, result)
                rows.append(RoundItemStatistics(round_item=item, group=group, **fields))
    RoundItemStatistics.objects.bulk_create(rows)

    decision = consensus.evaluate_stopping_rule(
        document["stopping_rule"],
        _round_outcomes(study=study, latest=round_, latest_outcomes=outcomes),
    )
    round_.status = Round.Status.ANALYSED
    round_.stopping_decision = {
        "stop": decision.stop,
        "criteria_met": list(decision.criteria_met),
        "reasons": list(decision.reasons),
    }
    round_.save(update_fields=["status", "stopping_decision"])
    counts: dict[str, int] = defaultdict(int)
    for outcome in outcomes.values():
        counts[outcome] += 1
    record(study=study, actor=actor, action="round.analyse", target=f"round {round_.number}",
           after={"outcomes": dict(counts), "stopping": round_.stopping_decision})  # fmt: skip
    return round_


def paired_ratings(
    *, earlier: Round, later: Round
) -> dict[str, tuple[dict[int, int | None], dict[int, int | None]]]:
    """Per identity rated with the same item version in both rounds: the submitted answers of
    each round keyed by panelist (a reworded item is a new question, so it is not paired)."""
    versions_then = dict(earlier.items.values_list("identity", "item_version"))
    same = {
        identity
        for identity, version in later.items.values_list("identity", "item_version")
        if versions_then.get(identity) == version
    }
    result: dict[str, tuple[dict[int, int | None], dict[int, int | None]]] = {
        str(identity): ({}, {}) for identity in same
    }
    for index, round_ in enumerate((earlier, later)):
        for identity, panelist_id, rating in Response.objects.filter(
            round_item__round=round_,
            round_item__identity__in=same,
            is_draft=False,
        ).values_list("round_item__identity", "panelist_id", "rating"):
            result[str(identity)][index][panelist_id] = rating
    return result


def _round_outcomes(
    *, study: DelphiStudy, latest: Round, latest_outcomes: dict[str, str]
) -> list[consensus.RoundOutcomes]:
    rounds: list[consensus.RoundOutcomes] = []
    analysed = study.rounds.filter(
        status__in=[Round.Status.ANALYSED, Round.Status.FEEDBACK_RELEASED], number__lt=latest.number
    ).order_by("number")
    for round_ in analysed:
        outcomes = {
            str(identity): outcome
            for identity, outcome in RoundItemStatistics.objects.filter(
                round_item__round=round_, group=""
            ).values_list("round_item__identity", "outcome")
        }
        rounds.append(consensus.RoundOutcomes(number=round_.number, outcomes=outcomes))
    pct_unchanged: dict[str, float | None] = {}
    previous = study.rounds.filter(number=latest.number - 1).first()
    if previous is not None:
        for identity, (before, after) in paired_ratings(earlier=previous, later=latest).items():
            pct_unchanged[identity] = stats.rating_stability(before, after).pct_unchanged
    rounds.append(
        consensus.RoundOutcomes(
            number=latest.number, outcomes=latest_outcomes, pct_unchanged=pct_unchanged
        )
    )
    return rounds


@transaction.atomic
def triage_suggestion(
    *, suggestion: Suggestion, actor: AbstractBaseUser, accept: bool, reason: str
) -> Suggestion:
    """Accept or reject a suggestion, with the reason recorded (and shown in the report)."""
    suggestion = (
        Suggestion.objects.select_for_update().select_related("round").get(pk=suggestion.pk)
    )
    if not reason.strip():
        raise DelphiError("give the reason for accepting or rejecting the suggestion")
    if suggestion.round.study.rounds.filter(number=suggestion.round.number + 1).exists():
        raise DelphiError("the next round is drafted already; its items can no longer change")
    if suggestion.round.status in (Round.Status.DRAFT, Round.Status.OPEN):
        raise DelphiError(f"close round {suggestion.round.number} before triaging its suggestions")
    before = {"status": suggestion.status, "reason": suggestion.triage_reason}
    suggestion.status = Suggestion.Status.ACCEPTED if accept else Suggestion.Status.REJECTED
    suggestion.triage_reason = reason.strip()
    suggestion.triaged_by = actor
    suggestion.triaged_at = timezone.now()
    suggestion.save(update_fields=["status", "triage_reason", "triaged_by", "triaged_at"])
    record(study=suggestion.round.study, actor=actor, action="suggestion.triage",
           target=f"suggestion {suggestion.pk} ({suggestion.kind})", before=before,
           after={"status": suggestion.status}, reason=suggestion.triage_reason)  # fmt: skip
    return suggestion


@transaction.atomic
def release_feedback(*, round_: Round, actor: AbstractBaseUser) -> Round:
    """Make the round's group statistics and anonymous comments visible to the panel."""
    round_ = _locked_round(round_)
    _require_status(round_, Round.Status.ANALYSED, doing="release the feedback of")
    round_.status = Round.Status.FEEDBACK_RELEASED
    round_.feedback_released_at = timezone.now()
    round_.save(update_fields=["status", "feedback_released_at"])
    record(
        study=round_.study, actor=actor, action="round.feedback", target=f"round {round_.number}"
    )
    return round_


# --------------------------------------------------------------------------- next round


@dataclass
class _Draft:
    identity: uuid.UUID
    kind: str
    parent_identity: uuid.UUID | None
    name: str
    description: str
    item_version: int
    notes: list[str] = field(default_factory=list)
    changed: bool = False


def latest_outcomes(study: DelphiStudy) -> dict[str, tuple[RoundItem, str]]:
    """Each identity's latest round item among analysed rounds, with its whole-panel outcome."""
    latest: dict[str, tuple[RoundItem, str]] = {}
    for row in (
        RoundItemStatistics.objects.filter(round_item__round__study=study, group="")
        .select_related("round_item__round")
        .order_by("round_item__round__number")
    ):
        latest[str(row.round_item.identity)] = (row.round_item, row.outcome)
    return latest


def removed_identities(study: DelphiStudy) -> dict[str, str]:
    """Identities taken out by accepted delete or merge suggestions, with why."""
    removed: dict[str, str] = {}
    for suggestion in Suggestion.objects.filter(
        round__study=study,
        status=Suggestion.Status.ACCEPTED,
        kind__in=[Suggestion.Kind.DELETE, Suggestion.Kind.MERGE],
    ):
        how = "deleted" if suggestion.kind == Suggestion.Kind.DELETE else "merged"
        removed[str(suggestion.target_identity)] = f"{how}: {suggestion.triage_reason}"
    return removed


@transaction.atomic
def start_next_round(*, study: DelphiStudy, actor: AbstractBaseUser) -> Round:
    """Draft the next round: unresolved items (or all, per the carry-over policy), every item
    an accepted suggestion changed (as a new item version), and the items panelists added."""
    study = DelphiStudy.objects.select_for_update().get(pk=study.pk)
    previous = study.rounds.order_by("-number").first()
    if previous is None:
        raise DelphiError("lock the protocol first: it drafts round 1")
    _require_status(previous, Round.Status.FEEDBACK_RELEASED, doing="build on")
    decision = previous.stopping_decision or {}
    # "All resolved" and "stability" judge the items that were rated; an accepted suggestion
    # that adds or rewords an item gives the panel something it has not rated yet, so only
    # the maximum number of rounds stops the study then.
    rewording = previous.suggestions.filter(status=Suggestion.Status.ACCEPTED).exclude(
        kind=Suggestion.Kind.DELETE
    )
    if decision.get("stop") and (
        "max_rounds" in decision.get("criteria_met", []) or not rewording.exists()
    ):
        raise DelphiError(
            "the locked stopping rule is met ("
            + "; ".join(decision["reasons"])
            + "): finish the study instead of starting another round"
        )
    pending = previous.suggestions.filter(status=Suggestion.Status.PENDING).count()
    if pending:
        raise DelphiError(
            f"triage the {pending} pending suggestion(s) of round {previous.number} first"
        )
    outcome_of = {
        str(identity): outcome
        for identity, outcome in RoundItemStatistics.objects.filter(
            round_item__round=previous, group=""
        ).values_list("round_item__identity", "outcome")
    }
    drafts: dict[str, _Draft] = {}
    order: list[str] = []
    for item in previous.items.order_by("position", "id"):
        key = str(item.identity)
        drafts[key] = _Draft(
            identity=item.identity, kind=item.kind, parent_identity=item.parent_identity,
            name=item.name, description=item.description, item_version=item.item_version,
        )  # fmt: skip
        order.append(key)
    removed: set[str] = set()
    added: list[str] = []
    for suggestion in previous.suggestions.filter(status=Suggestion.Status.ACCEPTED).order_by("id"):
        details = suggestion.details
        why = suggestion.triage_reason
        target = drafts.get(str(suggestion.target_identity)) if suggestion.target_identity else None
        if suggestion.kind == Suggestion.Kind.ADD:
            identity = uuid.uuid4()
            key = str(identity)
            drafts[key] = _Draft(
                identity=identity, kind=details.get("kind", "subcategory"),
                parent_identity=uuid.UUID(details["parent_identity"]) if details.get("parent_identity") else None,
                name=details["name"], description=details.get("description", ""), item_version=1,
                notes=[f"Added at a panelist's suggestion ({why})"], changed=True,
            )  # fmt: skip
            added.append(key)
        elif target is None:
            continue
        elif suggestion.kind == Suggestion.Kind.RENAME:
            target.notes.append(f"Renamed from {target.name!r} ({why})")
            target.name = details["name"]
            target.changed = True
        elif suggestion.kind == Suggestion.Kind.MOVE:
            old_parent = drafts.get(str(target.parent_identity))
            new_parent = drafts.get(details["parent_identity"])
            target.notes.append(
                f"Moved from {old_parent.name if old_parent else '?'!r} to "
                f"{new_parent.name if new_parent else '?'!r} ({why})"
            )
            target.parent_identity = uuid.UUID(details["parent_identity"])
            target.changed = True
        elif suggestion.kind == Suggestion.Kind.MERGE:
            into = drafts.get(details["into_identity"])
            if into is not None:
                into.notes.append(f"Merged with {target.name!r} ({why})")
                into.changed = True
                # The merged item's children follow it into the item it merged into: a new
                # parent is a new question for them, as with a move.
                for draft in drafts.values():
                    if draft.parent_identity == target.identity:
                        draft.parent_identity = into.identity
                        draft.notes.append(
                            f"moved under {into.name!r} as {target.name!r} merged into it ({why})"
                        )
                        draft.changed = True
            removed.add(str(target.identity))
        elif suggestion.kind == Suggestion.Kind.DELETE:
            removed.add(str(target.identity))
    # What is under a removed item goes with it, down to the tasks of a deleted category.
    grew = True
    while grew:
        below = {k for k, d in drafts.items() if str(d.parent_identity) in removed} - removed
        removed |= below
        grew = bool(below)
    keep_resolved = study.carry_over == DelphiStudy.CarryOver.RERATE_ALL
    next_round = Round.objects.create(study=study, number=previous.number + 1)
    # Added items sit right after their parent (or at the end for a new category).
    sequence: list[str] = []
    for key in order:
        sequence.append(key)
        sequence.extend(a for a in added if str(drafts[a].parent_identity) == key)
    sequence.extend(a for a in added if a not in sequence)
    position = 0
    for key in sequence:
        draft = drafts[key]
        if key in removed:
            continue
        resolved = outcome_of.get(key) in (
            consensus.Outcome.CONSENSUS_IN,
            consensus.Outcome.CONSENSUS_OUT,
        )
        if resolved and not keep_resolved and not draft.changed:
            continue
        version = (
            draft.item_version + 1 if draft.changed and key not in added else draft.item_version
        )
        RoundItem.objects.create(
            round=next_round, identity=draft.identity, item_version=version, kind=draft.kind,
            parent_identity=draft.parent_identity, position=position, name=draft.name,
            description=draft.description, change_note="; ".join(draft.notes),
        )  # fmt: skip
        position += 1
    if position == 0:
        raise DelphiError(
            f"no item is left to rate after round {previous.number}: every item reached "
            "consensus or was removed; finish the study"
        )
    record(study=study, actor=actor, action="round.draft", target=f"round {next_round.number}",
           after={"items": position, "removed": sorted(removed), "added": len(added)})  # fmt: skip
    return next_round


# --------------------------------------------------------------------------- finish / release


@transaction.atomic
def finish_study(*, study: DelphiStudy, actor: AbstractBaseUser, reason: str = "") -> DelphiStudy:
    """End the rounds. When the locked stopping rule is not met, a reason is required and
    reported (ending early is a deviation from the protocol)."""
    study = DelphiStudy.objects.select_for_update().get(pk=study.pk)
    if study.status != DelphiStudy.Status.RUNNING:
        raise DelphiError(f"cannot finish a study that is {study.get_status_display().lower()}")
    latest = study.rounds.order_by("-number").first()
    if latest is None or latest.status not in (
        Round.Status.ANALYSED,
        Round.Status.FEEDBACK_RELEASED,
    ):
        raise DelphiError("analyse the latest round before finishing")
    met = bool(latest.stopping_decision and latest.stopping_decision.get("stop"))
    if not met and not reason.strip():
        raise DelphiError(
            "the locked stopping rule is not met ("
            + "; ".join((latest.stopping_decision or {}).get("reasons", []))
            + "); give the reason for ending the study early"
        )
    study.status = DelphiStudy.Status.FINISHED
    study.finished_at = timezone.now()
    study.finished_reason = (
        "stopping rule met: " + "; ".join(latest.stopping_decision["reasons"]) if met
        else f"ended early by the coordinator: {reason.strip()}"
    )  # fmt: skip
    study.save(update_fields=["status", "finished_at", "finished_reason"])
    record(study=study, actor=actor, action="study.finish", target=f"study {study.pk}",
           reason=study.finished_reason)  # fmt: skip
    return study


def node_history(study: DelphiStudy, identity: str) -> list[dict[str, Any]]:
    history = []
    for row in (
        RoundItemStatistics.objects.filter(
            round_item__round__study=study, round_item__identity=identity, group=""
        )
        .select_related("round_item__round")
        .order_by("round_item__round__number")
    ):
        item = row.round_item
        history.append(
            {
                "round": item.round.number, "item_version": item.item_version, "name": item.name,
                "change_note": item.change_note, "outcome": row.outcome, "n_rated": row.n_rated,
                "median": row.median, "iqr": row.iqr, "pct_high": row.pct_high, "pct_low": row.pct_low,
            }
        )  # fmt: skip
    return history


@dataclass(frozen=True)
class ReleaseSummary:
    version: TaxonomyVersion
    included: int
    excluded: dict[str, str]  # node name -> why it is not in the released version


@transaction.atomic
def release_taxonomy(
    *, study: DelphiStudy, actor: AbstractBaseUser, name: str, description: str = ""
) -> ReleaseSummary:
    """The consensus taxonomy as a new released version, each node keeping its identity and
    carrying its history through the rounds. A node is in when its latest outcome is
    consensus in and its parent is in (or, for a kind the panel did not rate, when the draft
    had it and some child is in)."""
    study = DelphiStudy.objects.select_for_update().get(pk=study.pk)
    if study.status != DelphiStudy.Status.FINISHED:
        raise DelphiError("finish the study before releasing its taxonomy")
    name = name.strip()
    if not name:
        raise DelphiError("name: give the released taxonomy version a name")
    if TaxonomyVersion.objects.filter(name=name).exists():
        raise DelphiError(f"name: a taxonomy version named {name!r} exists already")
    latest = latest_outcomes(study)
    removed = removed_identities(study)
    # Nodes keep the place they had when first put to the panel (the draft's tree order; added
    # items after), not the round they were last rated in: a category re-rated in round 2
    # must not move behind the others.
    first_seen: dict[str, tuple[int, int]] = {}
    for identity, number, position in (
        RoundItem.objects.filter(round__study=study)
        .order_by("-round__number")
        .values_list("identity", "round__number", "position")
    ):
        first_seen[str(identity)] = (number, position)
    rated_kinds = set(_protocol(study)["questions"]["rate_kinds"])
    draft_nodes = {str(n.identity): n for n in study.draft_taxonomy.nodes.select_related("parent")}
    excluded: dict[str, str] = {}
    entries: dict[str, dict[str, Any]] = {}
    for identity, (item, outcome) in latest.items():
        if identity in removed:
            excluded[item.name] = removed[identity]
        elif outcome != consensus.Outcome.CONSENSUS_IN:
            excluded[item.name] = f"{outcome.replace('_', ' ')} in round {item.round.number}"
        else:
            entries[identity] = {
                "kind": item.kind, "name": item.name, "description": item.description,
                "parent": str(item.parent_identity) if item.parent_identity else None,
                "position": first_seen[identity],
            }  # fmt: skip
    # Unrated parent kinds come from the draft (categories when only subcategories were rated).
    for entry in list(entries.values()):
        parent = entry["parent"]
        while parent and parent not in entries and parent in draft_nodes:
            node = draft_nodes[parent]
            if node.kind in rated_kinds:
                break
            entries[parent] = {
                "kind": node.kind, "name": node.name, "description": node.description,
                "parent": str(node.parent.identity) if node.parent_id else None,
                "position": (0, node.position),
            }  # fmt: skip
            parent = entries[parent]["parent"]

    version = TaxonomyVersion.objects.create(
        name=name, description=description or f"Released by the Delphi study {study.title!r}.",
        status=TaxonomyVersion.Status.RELEASED, source=TaxonomyVersion.Source.DELPHI,
        derived_from=study.draft_taxonomy, released_at=timezone.now(),
    )  # fmt: skip
    created: dict[str, TaxonomyNode] = {}
    siblings: dict[str | None, int] = defaultdict(int)  # positions count among siblings
    depth = {"category": 0, "subcategory": 1, "task": 2}
    for identity, entry in sorted(
        entries.items(), key=lambda kv: (depth[kv[1]["kind"]], kv[1]["position"])
    ):
        parent = entry["parent"]
        if entry["kind"] != "category" and parent not in created:
            parent_name = latest[parent][0].name if parent in latest else "?"
            excluded[entry["name"]] = f"its parent {parent_name!r} is not in the consensus taxonomy"
            continue
        created[identity] = TaxonomyNode.objects.create(
            version=version, identity=uuid.UUID(identity), kind=entry["kind"],
            parent=created[parent] if entry["kind"] != "category" else None,
            position=siblings[parent if entry["kind"] != "category" else None],
            name=entry["name"], description=entry["description"],
            history=node_history(study, identity),
        )  # fmt: skip
        siblings[parent if entry["kind"] != "category" else None] += 1
    if not created:
        raise DelphiError("no item reached consensus in: there is no taxonomy to release")
    study.released_taxonomy = version
    study.status = DelphiStudy.Status.RELEASED
    study.save(update_fields=["released_taxonomy", "status"])
    record(study=study, actor=actor, action="taxonomy.release", target=name,
           after={"nodes": len(created), "excluded": excluded})  # fmt: skip
    return ReleaseSummary(version=version, included=len(created), excluded=excluded)
