"""Reads about accounts: who is locked out and until when, whose tokens are listed."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime

from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, F, Min, Q, QuerySet
from django.utils import timezone

from annotation.models import StudyMembership
from medhelm_site.accounts.models import PUBLIC_ID_LENGTH, ApiToken

Role = StudyMembership.Role


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


def administers(*, user: AbstractBaseUser) -> bool:
    """Staff and superusers: they lift every lockout and see the addresses locked out."""
    return bool(user.is_staff or user.is_superuser)


def _coordinated_studies(user: AbstractBaseUser) -> QuerySet[StudyMembership]:
    """The ids of the studies `user` actively coordinates. A coordinator who also rates a
    study acts there only as a clinician (annotation's acting_roles), so not that one."""
    rated = StudyMembership.objects.filter(user=user, role=Role.CLINICIAN, is_active=True)
    return (
        StudyMembership.objects.filter(user=user, role=Role.COORDINATOR, is_active=True)
        .exclude(study__in=rated.values("study"))
        .values("study")
    )


def may_lift_lockouts(*, user: AbstractBaseUser) -> bool:
    """Whether `user` has a lockouts page at all: staff, or a coordinator of a study."""
    return administers(user=user) or _coordinated_studies(user).exists()


def unlockable_usernames(
    *, actor: AbstractBaseUser, usernames: Iterable[str]
) -> dict[str, int | None]:
    """The one rule of who lifts whose lockout: of `usernames`, those `actor` may unlock,
    each with the study through which they may (None for staff); the rest are refused.

    Staff and superusers unlock every username. A coordinator unlocks only an existing
    account that is neither staff nor superuser and whose every study membership (one at
    least) is an active one in a study they actively coordinate. Coordinators can add any
    account to their study: a membership since removed, or one beside memberships elsewhere,
    would let them lift the lockout of anyone's account and guess its password without end.
    """
    names = set(usernames)
    if administers(user=actor):
        return dict.fromkeys(names)
    names.discard("")
    if not names:
        return {}
    user_model = get_user_model()
    field = user_model.USERNAME_FIELD
    inside = Q(
        study_memberships__is_active=True,
        study_memberships__study__in=_coordinated_studies(actor),
    )
    rows = (
        user_model.objects.filter(**{f"{field}__in": names}, is_staff=False, is_superuser=False)
        .annotate(
            n_memberships=Count("study_memberships"),
            n_inside=Count("study_memberships", filter=inside),
            via_study=Min("study_memberships__study", filter=inside),
        )
        .filter(n_inside__gt=0, n_inside=F("n_memberships"))
        .values_list(field, "via_study")
    )
    return dict(rows)


def lockouts_visible_to(*, user: AbstractBaseUser) -> list[Lockout]:
    """Lockouts in force that `user` may lift (unlockable_usernames); the address each
    comes from only for staff (a coordinator has no business knowing where a member is)."""
    attempts = list(_active_attempts().order_by("username", "-attempt_time"))
    allowed = unlockable_usernames(actor=user, usernames={a.username or "" for a in attempts})
    with_address = administers(user=user)
    return [
        _lockout(a) if with_address else replace(_lockout(a), ip_address=None)
        for a in attempts
        if (a.username or "") in allowed
    ]


def tokens_of(*, user: AbstractBaseUser) -> QuerySet[ApiToken]:
    """The API tokens of `user` still in force, newest first."""
    return ApiToken.objects.filter(user=user).exclude(expiry__lte=timezone.now())


def all_tokens() -> QuerySet[ApiToken]:
    return ApiToken.objects.exclude(expiry__lte=timezone.now()).select_related("user")


def find_token(*, public_id: str) -> ApiToken | None:
    if len(public_id) != PUBLIC_ID_LENGTH:
        return None
    return ApiToken.objects.select_related("user").filter(digest__startswith=public_id).first()
