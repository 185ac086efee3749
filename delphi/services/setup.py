"""Setting a Delphi study up: protocol, draft taxonomy, coordinators, locking (the panel is\nin panel.py)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from delphi import consensus, protocol, stats
from delphi.audit import record
from delphi.errors import DelphiError
from delphi.models import (
    DelphiCoordinator,
    DelphiStudy,
    Round,
    RoundItem,
    TaxonomyVersion,
)
from delphi.services.taxonomy import version_tree
from medhelm_site.common.text_limits import checked_column_text, checked_text

DEFAULT_CONSENSUS_RULE: dict[str, Any] = {"preset": "comet_70_15"}
DEFAULT_STOPPING_RULE: dict[str, Any] = {"max_rounds": 3, "all_resolved": True}
PROTOCOL_FIELDS = (
    "title",
    "aims",
    "questions",
    "consensus_rule",
    "carry_over",
    "stopping_rule",
    "ask_reason_outside_iqr",
)


def _require_setup(study: DelphiStudy) -> None:
    if study.status != DelphiStudy.Status.SETUP:
        raise DelphiError(
            f"the protocol of {study.title!r} is locked (since "
            f"{study.protocol_locked_at:%Y-%m-%d %H:%M} UTC, hash {study.protocol_hash[:12]}); "
            "it can no longer change"
        )


def _validated_protocol(changes: dict[str, Any]) -> dict[str, Any]:
    """The protocol fields normalised; DelphiError naming the field at fault otherwise."""
    clean: dict[str, Any] = {}
    for key, value in changes.items():
        if key not in PROTOCOL_FIELDS:
            raise DelphiError(
                f"unknown protocol field {key!r}; allowed: {list(PROTOCOL_FIELDS)}", field=key
            )
        if key == "title":
            if not isinstance(value, str) or not value.strip():
                raise DelphiError("title: must not be empty", field="title")
            value = checked_column_text(
                value.strip(), model=DelphiStudy, column="title", error=DelphiError
            )
        elif key == "aims":
            value = checked_column_text(
                (value or "").strip(), model=DelphiStudy, column="aims", error=DelphiError
            )
        elif key == "questions":
            value = protocol.validate_questions(value)
        elif key == "consensus_rule":
            value = consensus.validate_rule(value)
        elif key == "stopping_rule":
            value = consensus.validate_stopping_rule(value)
        elif key == "carry_over":
            if value not in DelphiStudy.CarryOver.values:
                raise DelphiError(
                    f"carry_over: must be one of {DelphiStudy.CarryOver.values}, got {value!r}",
                    field="carry_over",
                )
        elif key == "ask_reason_outside_iqr":
            value = bool(value)
        clean[key] = value
    return clean


@transaction.atomic
def create_delphi_study(
    *,
    title: str,
    draft_taxonomy: TaxonomyVersion,
    created_by: AbstractBaseUser,
    aims: str = "",
    questions: dict[str, Any] | None = None,
    consensus_rule: dict[str, Any] | None = None,
    carry_over: str = DelphiStudy.CarryOver.DROP_RESOLVED,
    stopping_rule: dict[str, Any] | None = None,
    ask_reason_outside_iqr: bool = False,
) -> DelphiStudy:
    """A study in set-up, its creator its first coordinator."""
    fields = _validated_protocol(
        {
            "title": title,
            "aims": aims,
            "questions": questions or {},
            "consensus_rule": consensus_rule or DEFAULT_CONSENSUS_RULE,
            "carry_over": carry_over,
            "stopping_rule": stopping_rule or DEFAULT_STOPPING_RULE,
            "ask_reason_outside_iqr": ask_reason_outside_iqr,
        }
    )
    if not draft_taxonomy.nodes.exists():
        raise DelphiError(f"taxonomy {draft_taxonomy.name!r} has no nodes to put to a panel")
    study = DelphiStudy.objects.create(
        draft_taxonomy=draft_taxonomy, created_by=created_by, **fields
    )
    DelphiCoordinator.objects.create(study=study, user=created_by)
    record(
        study=study,
        actor=created_by,
        action="study.create",
        target=f"study {study.pk}",
        after={**fields, "draft_taxonomy": draft_taxonomy.name},
    )
    return study


@transaction.atomic
def update_protocol(
    *, study: DelphiStudy, actor: AbstractBaseUser, changes: dict[str, Any]
) -> DelphiStudy:
    study = DelphiStudy.objects.select_for_update().get(pk=study.pk)
    _require_setup(study)
    clean = _validated_protocol(changes)
    before = {key: getattr(study, key) for key in clean}
    for key, value in clean.items():
        setattr(study, key, value)
    study.save(update_fields=list(clean))
    record(
        study=study,
        actor=actor,
        action="protocol.update",
        target=f"study {study.pk}",
        before=before,
        after=clean,
    )
    return study


@transaction.atomic
def set_draft_taxonomy(
    *, study: DelphiStudy, actor: AbstractBaseUser, taxonomy: TaxonomyVersion
) -> DelphiStudy:
    study = DelphiStudy.objects.select_for_update().get(pk=study.pk)
    _require_setup(study)
    if not taxonomy.nodes.exists():
        raise DelphiError(f"taxonomy {taxonomy.name!r} has no nodes to put to a panel")
    before = {"draft_taxonomy": study.draft_taxonomy.name}
    study.draft_taxonomy = taxonomy
    study.save(update_fields=["draft_taxonomy"])
    record(
        study=study,
        actor=actor,
        action="protocol.taxonomy",
        target=f"study {study.pk}",
        before=before,
        after={"draft_taxonomy": taxonomy.name},
    )
    return study


@transaction.atomic
def add_coordinator(
    *, study: DelphiStudy, actor: AbstractBaseUser, username: str
) -> DelphiCoordinator:
    # Before the query: PostgreSQL refuses a NUL even as a parameter.
    checked_text(username, field="username", error=DelphiError)
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise DelphiError(f"no user named {username!r}", field="username")
    coordinator, created = DelphiCoordinator.objects.get_or_create(study=study, user=user)
    if created:
        record(study=study, actor=actor, action="coordinator.add", target=username)
    return coordinator


# --------------------------------------------------------------------------- locking


def current_protocol_document(study: DelphiStudy) -> dict[str, Any]:
    """The protocol as it stands (while in set-up) or as it was locked."""
    if study.protocol_document is not None:
        return study.protocol_document
    return protocol.build_protocol_document(
        title=study.title,
        aims=study.aims,
        taxonomy=version_tree(study.draft_taxonomy),
        questions=protocol.validate_questions(study.questions),
        consensus_rule=consensus.validate_rule(study.consensus_rule),
        carry_over=study.carry_over,
        stopping_rule=consensus.validate_stopping_rule(study.stopping_rule),
        ask_reason_outside_iqr=study.ask_reason_outside_iqr,
        quantile_method=stats.DEFAULT_QUANTILE_METHOD,
        min_group_raters=stats.DEFAULT_MIN_GROUP_RATERS,
    )


@transaction.atomic
def lock_protocol(*, study: DelphiStudy, actor: AbstractBaseUser) -> DelphiStudy:
    """Freeze the protocol, store it with its SHA-256, and draft round 1 from the taxonomy."""
    study = DelphiStudy.objects.select_for_update().get(pk=study.pk)
    _require_setup(study)
    document = current_protocol_document(study)
    study.protocol_document = document
    study.protocol_hash = protocol.protocol_hash(document)
    study.protocol_locked_at = timezone.now()
    study.status = DelphiStudy.Status.LOCKED
    study.save(update_fields=["protocol_document", "protocol_hash", "protocol_locked_at", "status"])
    first = Round.objects.create(study=study, number=1, collects_suggestions=True)
    rated_kinds = set(document["questions"]["rate_kinds"])
    nodes = study.draft_taxonomy.nodes.select_related("parent").order_by("id")
    rated = [node for node in _tree_order(list(nodes)) if node.kind in rated_kinds]
    RoundItem.objects.bulk_create(
        [
            RoundItem(
                round=first,
                identity=node.identity,
                item_version=1,
                kind=node.kind,
                parent_identity=node.parent.identity if node.parent_id else None,
                position=position,
                name=node.name,
                description=node.description,
            )
            for position, node in enumerate(rated)
        ]
    )
    record(
        study=study,
        actor=actor,
        action="protocol.lock",
        target=f"study {study.pk}",
        after={"protocol_hash": study.protocol_hash, "round_1_items": len(rated)},
    )
    return study


def _tree_order(nodes: list[Any]) -> list[Any]:
    """Depth first, by position: category, its subcategories each followed by its tasks."""
    children: dict[int | None, list[Any]] = {}
    for node in nodes:
        children.setdefault(node.parent_id, []).append(node)
    ordered: list[Any] = []

    def walk(parent_id: int | None) -> None:
        for node in sorted(children.get(parent_id, []), key=lambda n: (n.position, n.pk)):
            ordered.append(node)
            walk(node.pk)

    walk(None)
    return ordered
