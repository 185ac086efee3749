"""Which of our accounts a provider's user is: the one bound to their subject (issuer +
`sub`); the first time, the one with the e-mail the provider says it verified, which binds
it. Every sign-in, let in or refused, leaves an audit row (annotation.audit).

An address is not a person: a provider may give a departed user's address to someone new.
So an account answers to its e-mail only until bound, an account bound to another subject
is refused, and staff and superusers are never found by e-mail unless
MEDHELM_OIDC_MATCH_STAFF_BY_EMAIL allows it."""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from annotation import audit
from medhelm_site.accounts.models import SsoIdentity
from medhelm_site.accounts.services import Username
from medhelm_site.accounts.sso.config import SsoConfig

logger = logging.getLogger(__name__)


class SsoRefused(Exception):
    """A provider's user we do not let in; `message` is shown on the login page."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason


def email_is_verified(claims: dict[str, Any]) -> bool:
    """The provider vouches for the e-mail: `email_verified` true (a JSON boolean, or the
    string "true" some providers send)."""
    flag = claims.get("email_verified")
    return flag is True or (isinstance(flag, str) and flag.strip().lower() == "true")


def _refuse(*, config: SsoConfig, email: str, reason: str, message: str) -> SsoRefused:
    audit.record(
        actor=None,
        action="account.sso_refused",
        target=Username(pk=email[:64] or "(no e-mail)"),
        after={"provider": config.provider_name, "email": email, "reason": reason},
    )
    return SsoRefused(message, reason=reason)


def _new_username(email: str) -> str:
    user_model = get_user_model()
    base = email.split("@")[0][:140] or "user"
    candidate, n = base, 1
    while user_model.objects.filter(**{user_model.USERNAME_FIELD: candidate}).exists():
        n += 1
        candidate = f"{base}{n}"
    return candidate


def _signed_in(
    *, config: SsoConfig, user: AbstractBaseUser, email: str, created: bool
) -> AbstractBaseUser:
    audit.record(
        actor=user,
        action="account.sso_login",
        target=user,
        after={"provider": config.provider_name, "email": email, "created": created},
    )
    return user


def match_user(
    *, config: SsoConfig, claims: dict[str, Any], issuer: str | None = None
) -> AbstractBaseUser:
    """The account the provider's user is, or SsoRefused saying why not. `issuer` is the
    ID token's `iss` (the configured issuer when None).

    A new account is made only with MEDHELM_OIDC_CREATE_USERS, and then has no role in any
    study until a coordinator adds it to one."""
    name = config.provider_name
    issuer = str(issuer or config.issuer).rstrip("/")
    subject = str(claims.get("sub") or "")
    email = str(claims.get("email") or "").strip()
    if not subject:
        raise _refuse(
            config=config,
            email=email,
            reason="no_subject",
            message=f"{name} did not say who you are (no subject), so you are not signed in. "
            "Tell your IT department, or log in with your username and password.",
        )
    identity = (
        SsoIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
    )
    if identity is not None:
        if not identity.user.is_active:
            raise _refuse(
                config=config,
                email=email,
                reason="inactive",
                message=f"The account your {name} sign-in belongs to is disabled. Ask staff.",
            )
        return _signed_in(config=config, user=identity.user, email=email, created=False)
    user = _match_by_email(config=config, email=email, claims=claims, subject=subject)
    created = user is None
    try:
        with transaction.atomic():
            if user is None:
                user = get_user_model().objects.create_user(
                    username=_new_username(email), email=email, password=None
                )
            SsoIdentity.objects.create(user=user, issuer=issuer, subject=subject)
            audit.record(
                actor=user,
                action="account.sso_bind",
                target=user,
                after={"provider": name, "issuer": issuer, "subject": subject, "email": email},
            )
            return _signed_in(config=config, user=user, email=email, created=created)
    except IntegrityError:
        # Another sign-in bound this account (or took this username) a moment ago.
        logger.warning("single sign-on: binding %s of %s to %s collided", subject, issuer, email)
        raise _refuse(
            config=config,
            email=email,
            reason="bind_conflict",
            message=f"Another sign-in with {name} to this account happened at the same "
            "moment. Start the sign-in again.",
        ) from None


def _match_by_email(
    *, config: SsoConfig, email: str, claims: dict[str, Any], subject: str
) -> AbstractBaseUser | None:
    """The unbound account a first sign-in is, by verified e-mail; None when a new one is to
    be made (MEDHELM_OIDC_CREATE_USERS)."""
    name = config.provider_name
    if not email:
        raise _refuse(
            config=config,
            email="",
            reason="no_email",
            message=f"{name} did not tell us your e-mail address, so we cannot find "
            "your account. Ask your IT department to release the e-mail claim to this "
            "site, or log in with your username and password.",
        )
    if not email_is_verified(claims):
        raise _refuse(
            config=config,
            email=email,
            reason="email_not_verified",
            message=f"{name} has not verified your e-mail address {email}, so we cannot "
            "match it to an account here. Verify it with your IT department, or log in "
            "with your username and password.",
        )
    users = list(get_user_model().objects.filter(email__iexact=email)[:2])
    if len(users) > 1:
        raise _refuse(
            config=config,
            email=email,
            reason="several_accounts",
            message=f"More than one account here has the e-mail address {email}. Ask "
            "staff to keep it on one account only, or log in with your username and "
            "password.",
        )
    if not users:
        if config.create_users:
            return None
        raise _refuse(
            config=config,
            email=email,
            reason="unknown_email",
            message=f"No account here has the e-mail address {email}. Ask a study "
            "coordinator or staff to create your account with this address.",
        )
    user = users[0]
    if not user.is_active:
        raise _refuse(
            config=config,
            email=email,
            reason="inactive",
            message=f"The account with the e-mail address {email} is disabled. Ask staff.",
        )
    if SsoIdentity.objects.filter(user=user).exists():
        logger.warning(
            "single sign-on refused: %s (subject %r) has the e-mail of %s, which is bound "
            "to another subject",
            email,
            subject,
            user.get_username(),
        )
        raise _refuse(
            config=config,
            email=email,
            reason="bound_to_another_subject",
            message=f"The account with the e-mail address {email} belongs to another "
            f"{name} user, so you are not signed in: the address may have been given to "
            "someone new. Log in with your username and password, or ask staff.",
        )
    if (user.is_staff or user.is_superuser) and not config.match_staff_by_email:
        logger.warning(
            "single sign-on refused: %s (subject %r) has the e-mail of staff account %s",
            email,
            subject,
            user.get_username(),
        )
        raise _refuse(
            config=config,
            email=email,
            reason="staff_by_email",
            message=f"The account with the e-mail address {email} is a staff account, "
            f"which {name} cannot reach by e-mail. Log in with your username and password.",
        )
    return user
