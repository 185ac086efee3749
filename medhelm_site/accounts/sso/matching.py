"""Which of our accounts a provider's user is: the one with the e-mail the provider says
it verified. Every sign-in, let in or refused, leaves an audit row (annotation.audit)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation import audit
from medhelm_site.accounts.services import Username
from medhelm_site.accounts.sso.config import SsoConfig


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


def match_user(*, config: SsoConfig, claims: dict[str, Any]) -> AbstractBaseUser:
    """The account the provider's user is, or SsoRefused saying why not.

    A new account is made only with MEDHELM_OIDC_CREATE_USERS, and then has no role in any
    study until a coordinator adds it to one."""
    name = config.provider_name
    email = str(claims.get("email") or "").strip()
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
    if not users and not config.create_users:
        raise _refuse(
            config=config,
            email=email,
            reason="unknown_email",
            message=f"No account here has the e-mail address {email}. Ask a study "
            "coordinator or staff to create your account with this address.",
        )
    if users and not users[0].is_active:
        raise _refuse(
            config=config,
            email=email,
            reason="inactive",
            message=f"The account with the e-mail address {email} is disabled. Ask staff.",
        )
    created = not users
    with transaction.atomic():
        if created:
            user = get_user_model().objects.create_user(
                username=_new_username(email), email=email, password=None
            )
        else:
            user = users[0]
        audit.record(
            actor=user,
            action="account.sso_login",
            target=user,
            after={"provider": name, "email": email, "created": created},
        )
    return user
