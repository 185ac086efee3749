"""Setting a Delphi study up: protocol, draft taxonomy, coordinators, panel, locking."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.utils import timezone

from delphi import consensus, protocol, stats
from delphi.audit import record
from delphi.errors import DelphiError
from delphi.models import (
    DelphiCoordinator,
    DelphiStudy,
    Panelist,
    PanelistRound,
    Round,
    RoundItem,
    TaxonomyVersion,
)
from delphi.services.taxonomy import version_tree

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


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _require_setup(study: DelphiStudy) -> None:
    if study.status != DelphiStudy.Status.SETUP:
        raise DelphiError(
            f"the protocol of {study.title!r} is locked (since "
            f"{study.protocol_locked_at:%Y-%m-%d %H:%M} UTC, hash {study.protocol_hash[:12]}); "
            "it can no longer change"
        )


def _validated_protocol(changes: dict[str, Any]) -> dict[str, Any]:
    # protocol.py and consensus.py are Django-free and raise plain ValueError; pages catch the
    # services' one error type, so re-raise as DelphiError with the same message.
    try:
        return _checked_protocol(changes)
    except DelphiError:
        raise
    except ValueError as error:
        raise DelphiError(str(error)) from None


def _checked_protocol(changes: dict[str, Any]) -> dict[str, Any]:
    clean: dict[str, Any] = {}
    for key, value in changes.items():
        if key not in PROTOCOL_FIELDS:
            raise DelphiError(f"unknown protocol field {key!r}; allowed: {list(PROTOCOL_FIELDS)}")
        if key == "title":
            if not isinstance(value, str) or not value.strip():
                raise DelphiError("title: must not be empty")
            value = value.strip()
        elif key == "aims":
            value = (value or "").strip()
        elif key == "questions":
            value = protocol.validate_questions(value)
        elif key == "consensus_rule":
            value = consensus.validate_rule(value)
        elif key == "stopping_rule":
            value = consensus.validate_stopping_rule(value)
        elif key == "carry_over":
            if value not in DelphiStudy.CarryOver.values:
                raise DelphiError(
                    f"carry_over: must be one of {DelphiStudy.CarryOver.values}, got {value!r}"
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
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise DelphiError(f"no user named {username!r}")
    coordinator, created = DelphiCoordinator.objects.get_or_create(study=study, user=user)
    if created:
        record(study=study, actor=actor, action="coordinator.add", target=username)
    return coordinator


# --------------------------------------------------------------------------- panel


def _next_pseudonym(study: DelphiStudy) -> str:
    taken = set(study.panelists.values_list("pseudonym", flat=True))
    number = len(taken) + 1
    while f"P{number:02d}" in taken:
        number += 1
    return f"P{number:02d}"


def _send_invitation(*, panelist: Panelist, token: str, base_url: str, reminder: bool) -> None:
    study = panelist.study
    link = f"{base_url.rstrip('/')}/delphi/join/{token}/"
    subject = ("Reminder: " if reminder else "") + f"Invitation to the Delphi panel {study.title!r}"
    body = (
        f"You are invited to take part, as panelist {panelist.pseudonym}, in the Delphi study "
        f"{study.title!r}.\n\n{study.aims}\n\n"
        "Other panelists will never see your name or your individual answers.\n\n"
        f"Join with this personal link (it works once; ask the coordinator for a new one if "
        f"it expired):\n{link}\n"
    )
    send_mail(subject, body, None, [panelist.email])


@transaction.atomic
def invite_panelist(
    *,
    study: DelphiStudy,
    actor: AbstractBaseUser,
    email: str,
    base_url: str,
    stakeholder_group: str = "",
    specialty: str = "",
) -> tuple[Panelist, str]:
    """Invite someone by e-mail; returns the panelist and the one-time token (not stored)."""
    if study.status in (DelphiStudy.Status.FINISHED, DelphiStudy.Status.RELEASED):
        raise DelphiError("the study has finished; no more panelists can join")
    email = email.strip().lower()
    if "@" not in email:
        raise DelphiError(f"{email!r} is not an e-mail address")
    if study.panelists.filter(email=email).exists():
        raise DelphiError(f"{email} is already on the panel")
    token = secrets.token_urlsafe(32)
    try:
        with transaction.atomic():
            panelist = Panelist.objects.create(
                study=study,
                pseudonym=_next_pseudonym(study),
                email=email,
                stakeholder_group=stakeholder_group.strip(),
                specialty=specialty.strip(),
                invite_token_hash=_token_hash(token),
                invited_at=timezone.now(),
            )
    except IntegrityError:
        raise DelphiError(f"{email} is already on the panel") from None
    # Someone invited while a round is open answers that round too.
    for round_ in study.rounds.filter(status=Round.Status.OPEN):
        PanelistRound.objects.get_or_create(panelist=panelist, round=round_)
    record(
        study=study,
        actor=actor,
        action="panelist.invite",
        target=panelist.pseudonym,
        after={"stakeholder_group": panelist.stakeholder_group, "specialty": specialty},
    )
    transaction.on_commit(
        lambda: _send_invitation(panelist=panelist, token=token, base_url=base_url, reminder=False)
    )
    return panelist, token


@transaction.atomic
def renew_invitation(
    *, panelist: Panelist, actor: AbstractBaseUser | None, base_url: str, reminder: bool = False
) -> str:
    """A fresh one-time link for a panelist who has not joined yet; the old link stops working."""
    panelist = Panelist.objects.select_for_update().get(pk=panelist.pk)
    if panelist.user_id is not None:
        raise DelphiError(f"{panelist.pseudonym} has already joined; they log in as usual")
    if panelist.withdrawn_at is not None:
        raise DelphiError(f"{panelist.pseudonym} has withdrawn")
    token = secrets.token_urlsafe(32)
    panelist.invite_token_hash = _token_hash(token)
    panelist.invited_at = timezone.now()
    panelist.save(update_fields=["invite_token_hash", "invited_at"])
    record(study=panelist.study, actor=actor, action="panelist.reinvite", target=panelist.pseudonym)
    transaction.on_commit(
        lambda: _send_invitation(
            panelist=panelist, token=token, base_url=base_url, reminder=reminder
        )
    )
    return token


def panelist_for_token(token: str) -> Panelist | None:
    """The panelist a still-unused invitation token belongs to."""
    if not token:
        return None
    return (
        Panelist.objects.select_related("study")
        .filter(invite_token_hash=_token_hash(token), user__isnull=True, withdrawn_at__isnull=True)
        .first()
    )


@transaction.atomic
def accept_invitation(*, token: str, user: AbstractBaseUser) -> Panelist:
    """Bind the invitation to `user`; the token is spent."""
    found = panelist_for_token(token)
    if found is None:
        raise DelphiError(
            "this invitation link is not valid: it was used already, renewed, or withdrawn"
        )
    panelist = Panelist.objects.select_for_update().get(pk=found.pk)
    if panelist.user_id is not None:
        raise DelphiError("this invitation link was used already")
    if panelist.study.panelists.filter(user=user).exists():
        raise DelphiError("you are already on this panel under another invitation")
    if panelist.study.coordinators.filter(user=user).exists():
        raise DelphiError("a coordinator of the study cannot also be a panelist")
    panelist.user = user
    panelist.joined_at = timezone.now()
    panelist.invite_token_hash = ""
    panelist.save(update_fields=["user", "joined_at", "invite_token_hash"])
    record(study=panelist.study, actor=user, action="panelist.join", target=panelist.pseudonym)
    return panelist


@transaction.atomic
def create_account_and_accept(*, token: str, username: str, password: str) -> Panelist:
    """A new account for an invited panelist who has none, then `accept_invitation`."""
    from django.contrib.auth.password_validation import validate_password
    from django.core.exceptions import ValidationError

    if panelist_for_token(token) is None:
        raise DelphiError(
            "this invitation link is not valid: it was used already, renewed, or withdrawn"
        )
    username = username.strip()
    if not username:
        raise DelphiError("username: must not be empty")
    User = get_user_model()
    if User.objects.filter(username=username).exists():
        raise DelphiError(f"username: {username!r} is taken; choose another or log in first")
    user = User(username=username)
    try:
        validate_password(password, user)
    except ValidationError as exc:
        raise DelphiError("password: " + " ".join(exc.messages)) from None
    user.set_password(password)
    user.save()
    return accept_invitation(token=token, user=user)


@transaction.atomic
def withdraw_panelist(*, panelist: Panelist, actor: AbstractBaseUser, reason: str = "") -> Panelist:
    """Withdraw a panelist (at their request or the coordinator's); answers already submitted
    stay in the rounds they were given in, the open round marks them withdrawn."""
    panelist = Panelist.objects.select_for_update().get(pk=panelist.pk)
    if panelist.withdrawn_at is not None:
        return panelist
    panelist.withdrawn_at = timezone.now()
    panelist.invite_token_hash = ""
    panelist.save(update_fields=["withdrawn_at", "invite_token_hash"])
    PanelistRound.objects.filter(
        panelist=panelist,
        round__status__in=[Round.Status.DRAFT, Round.Status.OPEN],
    ).exclude(status=PanelistRound.Status.SUBMITTED).update(status=PanelistRound.Status.WITHDRAWN)
    record(
        study=panelist.study,
        actor=actor,
        action="panelist.withdraw",
        target=panelist.pseudonym,
        reason=reason,
    )
    return panelist


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
    position = 0
    for node in _tree_order(list(nodes)):
        if node.kind not in rated_kinds:
            continue
        RoundItem.objects.create(
            round=first,
            identity=node.identity,
            item_version=1,
            kind=node.kind,
            parent_identity=node.parent.identity if node.parent_id else None,
            position=position,
            name=node.name,
            description=node.description,
        )
        position += 1
    record(
        study=study,
        actor=actor,
        action="protocol.lock",
        target=f"study {study.pk}",
        after={"protocol_hash": study.protocol_hash, "round_1_items": position},
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
