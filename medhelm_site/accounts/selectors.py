"""Reads about accounts: who is locked out and until when, whose tokens are listed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from django.utils import timezone

from annotation.models import StudyMembership
from medhelm_site.accounts.models import PUBLIC_ID_LENGTH, ApiToken


@dataclass(frozen=True)
class Lockout:
    """A username locked out from one address, until `ends_at`."""

    username: str
    ip_address: str | None
    failures: int
    ends_at: datetime


def _active_attempts() -> QuerySet[AccessAttempt]:
    since = timezone.now() - settings.AXES_COOLOFF_TIME
    return AccessAttempt.objects.filter(
        attempt_time__gt=since, failures_since_start__gte=settings.AXES_FAILURE_LIMIT
    )


def lockout_of(*, username: str | None, ip_address: str | None) -> Lockout | None:
    """The lockout of this username from this address, if one is in force."""
    attempt = (
        _active_attempts()
        .filter(username=username, ip_address=ip_address)
        .order_by("-attempt_time")
        .first()
    )
    return None if attempt is None else _lockout(attempt)


def _lockout(attempt: AccessAttempt) -> Lockout:
    return Lockout(
        username=attempt.username or "",
        ip_address=attempt.ip_address,
        failures=attempt.failures_since_start,
        ends_at=attempt.attempt_time + settings.AXES_COOLOFF_TIME,
    )


def coordinated_usernames(*, user: AbstractBaseUser) -> set[str]:
    """Usernames of the members of the studies `user` coordinates (themselves included)."""
    studies = StudyMembership.objects.filter(
        user=user, role=StudyMembership.Role.COORDINATOR, is_active=True
    ).values("study")
    return set(
        StudyMembership.objects.filter(study__in=studies).values_list(
            f"user__{get_user_model().USERNAME_FIELD}", flat=True
        )
    )


def lockouts_visible_to(*, user: AbstractBaseUser) -> list[Lockout]:
    """Lockouts in force that `user` may lift: every one for staff, else those of the
    members of the studies they coordinate."""
    attempts = _active_attempts().order_by("username", "-attempt_time")
    if not user.is_staff:
        attempts = attempts.filter(username__in=coordinated_usernames(user=user))
    return [_lockout(a) for a in attempts]


def tokens_of(*, user: AbstractBaseUser) -> QuerySet[ApiToken]:
    """The API tokens of `user` still in force, newest first."""
    return ApiToken.objects.filter(user=user).exclude(expiry__lte=timezone.now())


def all_tokens() -> QuerySet[ApiToken]:
    return ApiToken.objects.exclude(expiry__lte=timezone.now()).select_related("user")


def find_token(*, public_id: str) -> ApiToken | None:
    if len(public_id) != PUBLIC_ID_LENGTH:
        return None
    return ApiToken.objects.select_related("user").filter(digest__startswith=public_id).first()
