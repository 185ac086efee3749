"""Reads for the audit log page: which audit rows a user may read, filtered, and the
choices its filters offer.

A coordinator reads the rows of the studies they coordinate (and act in as coordinator: a
member who also rates there acts only as a clinician, see services.membership.acting_roles);
staff read every row, the site-wide ones (no study: tokens, judge definitions) too. Nobody
else reads any: the rows name models and raters, which clinicians are blinded to.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from django.utils import timezone

from annotation.models import AuditEvent, RatingStudy, StudyMembership

Role = StudyMembership.Role

AUDIT_COLUMNS = [
    "at",
    "study_id",
    "study",
    "actor",
    "action",
    "target_type",
    "target_id",
    "before",
    "after",
]


@dataclass(frozen=True)
class AuditFilters:
    """What the page is asked to show; None means "any"."""

    study_id: int | None = None
    actor_id: int | None = None
    action: str | None = None
    since: date | None = None  # first day shown (site time zone)
    until: date | None = None  # last day shown, inclusive


@dataclass(frozen=True)
class AuditScope:
    """The rows a user may read: every row (staff) or those of `study_ids`."""

    everything: bool
    studies: list[RatingStudy]

    @property
    def study_ids(self) -> set[int]:
        return {s.pk for s in self.studies}

    @property
    def readable(self) -> bool:
        return self.everything or bool(self.studies)


def audit_scope(*, user: AbstractBaseUser) -> AuditScope:
    """The studies whose audit rows `user` may read (one query)."""
    if not user.is_authenticated:
        return AuditScope(everything=False, studies=[])
    if user.is_staff:
        return AuditScope(everything=True, studies=list(RatingStudy.objects.order_by("name", "pk")))
    rated = StudyMembership.objects.filter(user=user, role=Role.CLINICIAN, is_active=True).values(
        "study"
    )
    studies = (
        RatingStudy.objects.filter(
            memberships__user=user,
            memberships__role=Role.COORDINATOR,
            memberships__is_active=True,
        )
        .exclude(pk__in=rated)
        .distinct()
        .order_by("name", "pk")
    )
    return AuditScope(everything=False, studies=list(studies))


def _in_scope(scope: AuditScope) -> QuerySet[AuditEvent]:
    events = AuditEvent.objects.all()
    if not scope.everything:
        events = events.filter(study_id__in=scope.study_ids)
    return events


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def audit_events(*, scope: AuditScope, filters: AuditFilters) -> QuerySet[AuditEvent]:
    """The rows `scope` may read that match `filters`, newest first, with actor and study."""
    events = _in_scope(scope)
    if filters.study_id is not None:
        events = events.filter(study_id=filters.study_id)
    if filters.actor_id is not None:
        events = events.filter(actor_id=filters.actor_id)
    if filters.action:
        events = events.filter(action=filters.action)
    if filters.since is not None:
        events = events.filter(at__gte=_day_start(filters.since))
    if filters.until is not None:
        events = events.filter(at__lt=_day_start(filters.until + timedelta(days=1)))
    return events.select_related("actor", "study").order_by("-at", "-id")


def audit_actions(*, scope: AuditScope) -> list[str]:
    """Every action found in the rows `scope` may read, for the action filter."""
    return sorted(set(_in_scope(scope).order_by().values_list("action", flat=True).distinct()))


def audit_actors(*, scope: AuditScope) -> list[tuple[int, str]]:
    """(id, username) of everyone who acted in the rows `scope` may read, by username."""
    ids = _in_scope(scope).exclude(actor=None).order_by().values("actor_id").distinct()
    user_model = get_user_model()
    field = user_model.USERNAME_FIELD
    return list(user_model.objects.filter(pk__in=ids).order_by(field).values_list("pk", field))


def _actor_pseudonyms(events: list[AuditEvent]) -> dict[tuple[int, int], str]:
    """(study id, user id) -> the pseudonym a clinician carries in that study, for the
    actors of `events` (one query): the log names a rater the way the study does."""
    pairs = {(e.study_id, e.actor_id) for e in events if e.study_id and e.actor_id}
    if not pairs:
        return {}
    rows = StudyMembership.objects.filter(
        study_id__in={s for s, _ in pairs},
        user_id__in={u for _, u in pairs},
        role=Role.CLINICIAN,
    ).exclude(pseudonym="")
    return {
        (study, user): pseudonym
        for study, user, pseudonym in rows.values_list("study_id", "user_id", "pseudonym")
        if (study, user) in pairs
    }


@dataclass(frozen=True)
class AuditRow:
    """One audit row as the page shows it."""

    at: datetime
    study: str  # "" for a site-wide row
    actor: str  # "" for the system (a management command, a worker)
    pseudonym: str  # the actor's pseudonym as a clinician of the study, if they are one
    action: str
    target: str
    before: str  # JSON, "" when there is none
    after: str


def audit_rows(*, events: list[AuditEvent]) -> list[AuditRow]:
    """The rows of one page (events read with audit_events), with pseudonyms (one query)."""
    pseudonyms = _actor_pseudonyms(events)
    return [
        AuditRow(
            at=e.at,
            study=e.study.name if e.study else "",
            actor=e.actor.get_username() if e.actor else "",
            pseudonym=pseudonyms.get((e.study_id, e.actor_id), ""),
            action=e.action,
            target=f"{e.target_type} {e.target_id}",
            before=_json_text(e.before, indent=1),
            after=_json_text(e.after, indent=1),
        )
        for e in events
    ]


def _json_text(value: Any, *, indent: int | None = None) -> str:
    if value is None:
        return ""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, indent=indent)


def audit_csv_rows(*, events: QuerySet[AuditEvent]) -> Iterator[dict[str, Any]]:
    """The rows of the CSV export, read in chunks (the log of a long study is large)."""
    for event in events.iterator(chunk_size=2000):
        yield {
            "at": event.at.isoformat(),
            "study_id": event.study_id,
            "study": event.study.name if event.study else "",
            "actor": event.actor.get_username() if event.actor else "",
            "action": event.action,
            "target_type": event.target_type,
            "target_id": event.target_id,
            "before": _json_text(event.before),
            "after": _json_text(event.after),
        }
