"""The panel of a Delphi study: invitations by one-time link, joining, withdrawing."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.utils import timezone

from delphi.audit import record
from delphi.errors import DelphiError
from delphi.models import DelphiAuditEvent, DelphiStudy, Panelist, PanelistRound, Round
from medhelm_site.common.text_limits import checked_column_text, checked_text


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


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
    email = _column_text(email.strip().lower(), model=Panelist, column="email")
    stakeholder_group = _column_text(
        stakeholder_group.strip(), model=Panelist, column="stakeholder_group"
    )
    specialty = _column_text(specialty.strip(), model=Panelist, column="specialty")
    if "@" not in email:
        raise DelphiError(f"{email!r} is not an e-mail address", field="email")
    if study.panelists.filter(email=email).exists():
        raise DelphiError(f"{email} is already on the panel", field="email")
    token = secrets.token_urlsafe(32)
    try:
        with transaction.atomic():
            panelist = Panelist.objects.create(
                study=study,
                pseudonym=_next_pseudonym(study),
                email=email,
                stakeholder_group=stakeholder_group,
                specialty=specialty,
                invite_token_hash=_token_hash(token),
                invited_at=timezone.now(),
            )
    except IntegrityError:
        raise DelphiError(f"{email} is already on the panel", field="email") from None
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


def _column_text(value: str, *, model: Any, column: str) -> str:
    return checked_column_text(value, model=model, column=column, error=DelphiError)


def _checked_username(User: Any, username: str) -> str:
    """A new account's username as the user model stores it: normalised, not empty, within
    its column, and passing the field's own validators (letters, digits and @.+-_)."""
    field = User._meta.get_field(User.USERNAME_FIELD)
    username = User.normalize_username(username.strip())
    if not username:
        raise DelphiError("username: must not be empty", field="username")
    # Before any query: PostgreSQL refuses a NUL even as a parameter.
    checked_text(username, field="username", error=DelphiError, max_length=field.max_length)
    try:
        field.run_validators(username)
    except ValidationError as exc:
        raise DelphiError("username: " + " ".join(exc.messages), field="username") from None
    return username


@transaction.atomic
def create_account_and_accept(*, token: str, username: str, password: str) -> Panelist:
    """A new account for an invited panelist who has none, then `accept_invitation`."""
    from django.contrib.auth.password_validation import validate_password

    if panelist_for_token(token) is None:
        raise DelphiError(
            "this invitation link is not valid: it was used already, renewed, or withdrawn"
        )
    User = get_user_model()
    username = _checked_username(User, username)
    if User.objects.filter(**{User.USERNAME_FIELD: username}).exists():
        raise DelphiError(
            f"username: {username!r} is taken; choose another or log in first", field="username"
        )
    user = User(**{User.USERNAME_FIELD: username})
    try:
        validate_password(password, user)
    except ValidationError as exc:
        raise DelphiError("password: " + " ".join(exc.messages), field="password") from None
    user.set_password(password)
    user.save()
    return accept_invitation(token=token, user=user)


@transaction.atomic
def withdraw_panelist(*, panelist: Panelist, actor: AbstractBaseUser, reason: str = "") -> Panelist:
    """Withdraw a panelist (at their request or the coordinator's); answers already submitted
    stay in the rounds they were given in, the open round marks them withdrawn."""
    reason = _column_text(reason, model=DelphiAuditEvent, column="reason")
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
