"""Analysing a closed round: every item's statistics and outcome, and the stopping rule."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from delphi import consensus, stats
from delphi.audit import record
from delphi.models import (
    DelphiStudy,
    PanelistRound,
    Response,
    Round,
    RoundItem,
    RoundItemStatistics,
)
from delphi.services.round_state import locked_protocol, locked_round, require_status

# The statistics of a withheld group: only its size is shown.
WITHHELD_FIELDS: dict[str, Any] = {
    "n_rated": 0,
    "n_unable": 0,
    "counts": {},
    "outcome": "withheld",
    **dict.fromkeys(
        ("median", "q1", "q3", "iqr", "mean", "sd", "pct_low", "pct_mid", "pct_high"), None
    ),
    **dict.fromkeys(("p30", "p70", "ipr", "ai", "ipras", "disagreement"), None),
}


@dataclass(frozen=True)
class _Method:
    """How the locked protocol turns ratings into outcomes."""

    rule: consensus.ConsensusRule
    quantile_method: str
    min_group_raters: int


@dataclass
class _PanelAnswers:
    """Who was asked in a round (and in which stakeholder group), and the submitted answers
    per round item as (panelist id, rating or None for unable to rate)."""

    n_invited: int
    group_of: dict[int, str]
    invited_by_group: dict[str, int]
    answers: dict[int, list[tuple[int, int | None]]] = field(default_factory=dict)


@transaction.atomic
def analyse_round(*, round_: Round, actor: AbstractBaseUser) -> Round:
    """Compute and store every item's statistics (whole panel and per stakeholder group) and
    outcome under the locked rule, and evaluate the stopping rule."""
    round_ = locked_round(round_)
    require_status(round_, Round.Status.CLOSED, doing="analyse")
    study = round_.study
    document = locked_protocol(study)
    method = _Method(
        rule=consensus.rule_from_dict(document["consensus_rule"]),
        quantile_method=document["statistics"]["quantile_method"],
        min_group_raters=document["statistics"]["min_group_raters"],
    )
    panel = _panel_answers(round_)
    RoundItemStatistics.objects.filter(round_item__round=round_).delete()
    rows: list[RoundItemStatistics] = []
    outcomes: dict[str, str] = {}
    for item in round_.items.all():
        item_rows, outcome = _item_rows(item, panel, method)
        rows += item_rows
        outcomes[str(item.identity)] = outcome
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
    record(
        study=study,
        actor=actor,
        action="round.analyse",
        target=f"round {round_.number}",
        after={"outcomes": dict(Counter(outcomes.values())), "stopping": round_.stopping_decision},
    )
    return round_


def _panel_answers(round_: Round) -> _PanelAnswers:
    """Only submitted answers count: drafts of non-responders are never analysed."""
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
    panel = _PanelAnswers(
        n_invited=len(invited), group_of=group_of, invited_by_group=dict(invited_by_group)
    )
    submitted = {e.panelist_id for e in invited if e.status == PanelistRound.Status.SUBMITTED}
    for response in Response.objects.filter(
        round_item__round=round_, panelist_id__in=submitted, is_draft=False
    ).only("round_item_id", "panelist_id", "rating", "unable_to_rate"):
        if response.rating is not None or response.unable_to_rate:
            panel.answers.setdefault(response.round_item_id, []).append(
                (response.panelist_id, response.rating)
            )
    return panel


def _item_rows(
    item: RoundItem, panel: _PanelAnswers, method: _Method
) -> tuple[list[RoundItemStatistics], str]:
    """One item's statistics rows (whole panel, then each group) and its outcome."""
    answers = panel.answers.get(item.pk, [])
    overall = stats.item_statistics(
        [rating for _, rating in answers],
        n_invited=panel.n_invited,
        quantile_method=method.quantile_method,
    )
    outcome = consensus.evaluate_consensus(method.rule, overall)
    rows = [
        RoundItemStatistics(
            round_item=item, group="", **{**overall.as_model_fields(), "outcome": outcome}
        )
    ]
    by_group: dict[str, list[int | None]] = {group: [] for group in panel.invited_by_group}
    for panelist_id, rating in answers:
        if panel.group_of.get(panelist_id):
            by_group[panel.group_of[panelist_id]].append(rating)
    grouped = stats.group_item_statistics(
        by_group,
        n_invited_by_group=panel.invited_by_group,
        min_raters=method.min_group_raters,
        quantile_method=method.quantile_method,
    )
    for group, result in grouped.items():
        if isinstance(result, stats.WithheldStatistics):
            fields = {**WITHHELD_FIELDS, "n_invited": panel.invited_by_group[group]}
        else:
            fields = result.as_model_fields()
            fields["outcome"] = consensus.evaluate_consensus(method.rule, result)
        rows.append(RoundItemStatistics(round_item=item, group=group, **fields))
    return rows, str(outcome)


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
    """The analysed rounds so far, as the stopping rule reads them."""
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
