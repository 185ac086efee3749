"""Audit rows written by the services (never by signals or save())."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from annotation.models import AuditEvent, RatingStudy


def record(
    *,
    actor: AbstractBaseUser | None,
    action: str,
    target: Any,
    study: RatingStudy | None = None,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> AuditEvent:
    return AuditEvent.objects.create(
        actor=actor if actor is not None and actor.is_authenticated else None,
        study=study,
        action=action,
        target_type=type(target).__name__,
        target_id=str(target.pk),
        before=before,
        after=after,
    )
