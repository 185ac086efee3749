"""Ending a study and releasing its consensus taxonomy as a new taxonomy version."""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from delphi import consensus, suggestions
from delphi.audit import record
from delphi.errors import DelphiError
from delphi.models import (
    DelphiAuditEvent,
    DelphiStudy,
    Round,
    RoundItem,
    RoundItemStatistics,
    Suggestion,
    TaxonomyNode,
    TaxonomyVersion,
)
from delphi.services.round_state import locked_protocol
from medhelm_site.common.text_limits import checked_column_text, checked_text, column_max_length

DEPTH = {"category": 0, "subcategory": 1, "task": 2}


@transaction.atomic
def finish_study(*, study: DelphiStudy, actor: AbstractBaseUser, reason: str = "") -> DelphiStudy:
    """End the rounds. When the locked stopping rule is not met, a reason is required and
    reported (ending early is a deviation from the protocol)."""
    checked_column_text(
        reason, model=DelphiStudy, column="finished_reason", error=DelphiError, field="reason"
    )
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
            + "); give the reason for ending the study early",
            field="reason",
        )
    study.status = DelphiStudy.Status.FINISHED
    study.finished_at = timezone.now()
    if met:
        study.finished_reason = "stopping rule met: " + "; ".join(
            latest.stopping_decision["reasons"]
        )
    else:
        study.finished_reason = f"ended early by the coordinator: {reason.strip()}"
    study.save(update_fields=["status", "finished_at", "finished_reason"])
    record(
        study=study,
        actor=actor,
        action="study.finish",
        target=f"study {study.pk}",
        reason=study.finished_reason,
    )
    return study


def latest_outcomes(*, study: DelphiStudy) -> dict[str, tuple[RoundItem, str]]:
    """Each identity's latest round item among analysed rounds, with its whole-panel outcome."""
    latest: dict[str, tuple[RoundItem, str]] = {}
    for row in (
        RoundItemStatistics.objects.filter(round_item__round__study=study, group="")
        .select_related("round_item__round")
        .order_by("round_item__round__number")
    ):
        latest[str(row.round_item.identity)] = (row.round_item, row.outcome)
    return latest


def removed_identities(*, study: DelphiStudy) -> dict[str, str]:
    """Identities taken out by accepted delete or merge suggestions, with why."""
    accepted = (
        Suggestion.objects.filter(round__study=study, status=Suggestion.Status.ACCEPTED)
        .select_related("round")
        .order_by("id")
    )
    return {
        identity: removal.summary
        for identity, removal in suggestions.removed_identities(accepted).items()
    }


def node_history(*, study: DelphiStudy, identity: str) -> list[dict[str, Any]]:
    """One entry per round the node was put to the panel: wording, version, outcome."""
    return _histories(study, identity=identity).get(str(identity), [])


def _histories(study: DelphiStudy, identity: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """`node_history` of every identity of the study (or of one) in one query."""
    rows = RoundItemStatistics.objects.filter(round_item__round__study=study, group="")
    if identity is not None:
        rows = rows.filter(round_item__identity=identity)
    histories: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows.select_related("round_item__round").order_by("round_item__round__number"):
        item = row.round_item
        histories[str(item.identity)].append(
            {
                "round": item.round.number,
                "item_version": item.item_version,
                "name": item.name,
                "change_note": item.change_note,
                "outcome": row.outcome,
                "n_rated": row.n_rated,
                "median": row.median,
                "iqr": row.iqr,
                "pct_high": row.pct_high,
                "pct_low": row.pct_low,
            }
        )
    return histories


@dataclass(frozen=True)
class ReleaseSummary:
    version: TaxonomyVersion
    included: int
    excluded: dict[str, str]  # node name -> why it is not in the released version


@dataclass(frozen=True)
class _Entry:
    """A node of the released version before it is written."""

    identity: str
    kind: str
    name: str
    description: str
    parent: str | None
    position: tuple[int, int]  # (round first put to the panel, position in it)


@transaction.atomic
def release_taxonomy(
    *, study: DelphiStudy, actor: AbstractBaseUser, name: str, description: str = ""
) -> ReleaseSummary:
    """The consensus taxonomy as a new released version, each node keeping its identity and
    carrying its history through the rounds. A node is in when its latest outcome is
    consensus in and its parent is in (or, for a kind the panel did not rate, when the draft
    had it and some child is in). A constant number of queries, whatever the tree's size."""
    study = DelphiStudy.objects.select_for_update().get(pk=study.pk)
    if study.status != DelphiStudy.Status.FINISHED:
        raise DelphiError("finish the study before releasing its taxonomy")
    name = name.strip()
    if not name:
        raise DelphiError("name: give the released taxonomy version a name", field="name")
    # The name is the version's and the audit row's target.
    longest = min(
        column_max_length(TaxonomyVersion, "name"), column_max_length(DelphiAuditEvent, "target")
    )
    checked_text(name, field="name", error=DelphiError, max_length=longest)
    checked_text(description, field="description", error=DelphiError)
    if TaxonomyVersion.objects.filter(name=name).exists():
        raise DelphiError(f"name: a taxonomy version named {name!r} exists already", field="name")
    latest = latest_outcomes(study=study)
    entries, excluded = _consensus_entries(study, latest)
    version = TaxonomyVersion.objects.create(
        name=name,
        description=description or f"Released by the Delphi study {study.title!r}.",
        status=TaxonomyVersion.Status.RELEASED,
        source=TaxonomyVersion.Source.DELPHI,
        derived_from=study.draft_taxonomy,
        released_at=timezone.now(),
    )
    kept = _connected(entries, latest, excluded)
    created = _write_nodes(version, kept, _histories(study))
    if not created:
        raise DelphiError("no item reached consensus in: there is no taxonomy to release")
    study.released_taxonomy = version
    study.status = DelphiStudy.Status.RELEASED
    study.save(update_fields=["released_taxonomy", "status"])
    record(
        study=study,
        actor=actor,
        action="taxonomy.release",
        target=name,
        after={"nodes": created, "excluded": excluded},
    )
    return ReleaseSummary(version=version, included=created, excluded=excluded)


def _consensus_entries(
    study: DelphiStudy, latest: dict[str, tuple[RoundItem, str]]
) -> tuple[dict[str, _Entry], dict[str, str]]:
    """The nodes whose latest outcome is consensus in, with the unrated parent kinds they
    need from the draft; and the name of every other node with why it is out."""
    removed = removed_identities(study=study)
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
    excluded: dict[str, str] = {}
    entries: dict[str, _Entry] = {}
    for identity, (item, outcome) in latest.items():
        if identity in removed:
            excluded[item.name] = removed[identity]
        elif outcome != consensus.Outcome.CONSENSUS_IN:
            excluded[item.name] = f"{outcome.replace('_', ' ')} in round {item.round.number}"
        else:
            entries[identity] = _Entry(
                identity=identity,
                kind=item.kind,
                name=item.name,
                description=item.description,
                parent=str(item.parent_identity) if item.parent_identity else None,
                position=first_seen[identity],
            )
    _add_unrated_parents(study, entries)
    return entries, excluded


def _add_unrated_parents(study: DelphiStudy, entries: dict[str, _Entry]) -> None:
    """Unrated parent kinds come from the draft (categories when only subcategories were
    rated)."""
    rated_kinds = set(locked_protocol(study)["questions"]["rate_kinds"])
    draft_nodes = {str(n.identity): n for n in study.draft_taxonomy.nodes.select_related("parent")}
    for entry in list(entries.values()):
        parent = entry.parent
        while parent and parent not in entries and parent in draft_nodes:
            node = draft_nodes[parent]
            if node.kind in rated_kinds:
                break
            entries[parent] = _Entry(
                identity=parent,
                kind=node.kind,
                name=node.name,
                description=node.description,
                parent=str(node.parent.identity) if node.parent_id else None,
                position=(0, node.position),
            )
            parent = entries[parent].parent


def _connected(
    entries: dict[str, _Entry],
    latest: dict[str, tuple[RoundItem, str]],
    excluded: dict[str, str],
) -> list[_Entry]:
    """The entries whose parent is in too, categories first, then in tree order; the others
    go to `excluded`."""
    kept: list[_Entry] = []
    keys: set[str] = set()
    for entry in sorted(entries.values(), key=lambda e: (DEPTH[e.kind], e.position)):
        if entry.kind != "category" and entry.parent not in keys:
            parent_name = latest[entry.parent][0].name if entry.parent in latest else "?"
            excluded[entry.name] = f"its parent {parent_name!r} is not in the consensus taxonomy"
            continue
        kept.append(entry)
        keys.add(entry.identity)
    return kept


def _write_nodes(
    version: TaxonomyVersion, kept: list[_Entry], histories: dict[str, list[dict[str, Any]]]
) -> int:
    """Write the nodes, one bulk insert per level so each level's parents have their ids;
    positions count among siblings. Returns how many were written."""
    created: dict[str, TaxonomyNode] = {}
    siblings: dict[str | None, int] = defaultdict(int)
    for depth in sorted(set(DEPTH.values())):
        level: list[TaxonomyNode] = []
        for entry in (e for e in kept if DEPTH[e.kind] == depth):
            parent = entry.parent if entry.kind != "category" else None
            node = TaxonomyNode(
                version=version,
                identity=uuid.UUID(entry.identity),
                kind=entry.kind,
                parent=created[parent] if parent is not None else None,
                position=siblings[parent],
                name=entry.name,
                description=entry.description,
                history=histories.get(entry.identity, []),
            )
            siblings[parent] += 1
            created[entry.identity] = node
            level.append(node)
        TaxonomyNode.objects.bulk_create(level)
    return len(created)
