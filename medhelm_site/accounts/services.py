"""Writes about accounts: API tokens made and revoked, lockouts lifted, single sign-on
bindings released; each with an audit row (annotation.audit)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from knox.settings import knox_settings

from annotation import audit
from annotation.models import RatingStudy
from medhelm_site.accounts import selectors
from medhelm_site.accounts.errors import AccountError
from medhelm_site.accounts.models import ApiToken, SsoIdentity

TOKEN_NAME_MAX = ApiToken._meta.get_field("name").max_length


@dataclass(frozen=True)
class Username:
    """The audit target of a lockout lifted for a username no account has."""

    pk: str


def create_token(
    *, user: AbstractBaseUser, name: str = "", expiry: timedelta | None = None
) -> tuple[ApiToken, str]:
    """A new API token of `user` and its secret, shown once and stored only as a hash."""
    name = name.strip()
    if len(name) > TOKEN_NAME_MAX:
        raise AccountError(f"A token's name has at most {TOKEN_NAME_MAX} characters.", field="name")
    with transaction.atomic():
        token, secret = ApiToken.objects.create(
            user=user,
            expiry=expiry or knox_settings.TOKEN_TTL,
            name=name,
            password_fingerprint=user.get_session_auth_hash(),
        )
        audit.record(
            actor=user,
            action="token.create",
            target=user,
            after={"token": token.public_id, "name": name, "expiry": token.expiry.isoformat()},
        )
    return token, secret


def may_manage_token(*, actor: AbstractBaseUser, token: ApiToken) -> bool:
    return actor.is_staff or token.user_id == actor.pk


def revoke_token(*, actor: AbstractBaseUser, token: ApiToken) -> None:
    """Delete a token: its owner or staff only."""
    if not may_manage_token(actor=actor, token=token):
        raise AccountError("Only the token's owner or staff can revoke it.", field="token")
    with transaction.atomic():
        audit.record(
            actor=actor,
            action="token.revoke",
            target=token.user,
            before={"token": token.public_id, "name": token.name},
        )
        token.delete()


def unbind_sso(*, actor: AbstractBaseUser, identity: SsoIdentity) -> None:
    """Release an account from the provider's subject it is bound to (staff, in the admin:
    the provider reissued the person's subject, or they moved provider). Its next sign-in
    by verified e-mail binds again."""
    with transaction.atomic():
        audit.record(
            actor=actor,
            action="account.sso_unbind",
            target=identity.user,
            before={"issuer": identity.issuer, "subject": identity.subject},
        )
        identity.delete()


def unlock_study(*, actor: AbstractBaseUser, username: str) -> RatingStudy | None:
    """The study through which `actor` may lift `username`'s lockout (None for staff), by
    the one rule of selectors.unlockable_usernames.

    Raises AccountError when `actor` may not."""
    allowed = selectors.unlockable_usernames(actor=actor, usernames=[username])
    if username not in allowed:
        raise AccountError(
            f"You cannot unlock {username}: a coordinator unlocks only an account that is not "
            "staff and whose every study membership is an active one in a study they "
            "coordinate. Ask staff to unlock it.",
            field="username",
        )
    study_id = allowed[username]
    return None if study_id is None else RatingStudy.objects.get(pk=study_id)


def unlock(*, actor: AbstractBaseUser | None, username: str) -> int:
    """Lift every lockout of `username` (from every address); the number of failure
    records removed. `actor` None is a management command run by an administrator.

    A coordinator's unlock is audited in their study, whose log they read: it counts the
    addresses instead of naming them (selectors.lockouts_visible_to hides them too)."""
    user_model = get_user_model()
    target = user_model.objects.filter(**{user_model.USERNAME_FIELD: username}).first()
    with transaction.atomic():
        study = None if actor is None else unlock_study(actor=actor, username=username)
        attempts = AccessAttempt.objects.filter(username=username)
        addresses = sorted({a.ip_address or "" for a in attempts})
        before = {
            "username": username,
            "failures": sum(a.failures_since_start for a in attempts),
            **({"addresses": addresses} if study is None else {"address_count": len(addresses)}),
        }
        removed, _ = attempts.delete()
        audit.record(
            actor=actor,
            action="account.unlock",
            target=target if target is not None else Username(pk=username[:64]),
            study=study,
            before=before,
            after={"unlocked": True},
        )
    return removed
