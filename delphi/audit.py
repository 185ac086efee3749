"""Audit rows of Delphi studies, written by the services (never by signals or save())."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from delphi.models import DelphiAuditEvent, DelphiStudy


def record(
    *,
    study: DelphiStudy,
    actor: AbstractBaseUser | None,
    action: str,
    target: str = "",
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    reason: str = "",
) -> DelphiAuditEvent:
    return DelphiAuditEvent.objects.create(
        study=study,
        actor=actor if actor is not None and actor.is_authenticated else None,
        action=action,
        target=target,
        before=before,
        after=after,
        reason=reason,
    )
