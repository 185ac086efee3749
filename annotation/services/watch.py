"""The agreement watch's state: a refresh is requested when ratings arrive (debounced), started
by a worker, and its snapshot or failure recorded where the dashboard shows it.

The refresh is the Celery task named task_names.REFRESH_WATCH (agreement computes it), sent
by name so that annotation never imports agreement.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.models import AgreementWatch, Assignment
from medhelm_site.common import task_names

logger = logging.getLogger(__name__)

#: A refresh requested longer ago than this and never started (a lost message or worker) no
#: longer holds back the next request.
STALE_REQUEST = timedelta(minutes=10)


def request_watch_refresh(*, study_id: int, force: bool = False) -> bool:
    """Queue one refresh of the study's watch unless one is already queued (the debounce;
    ``force``, the coordinator's button: queue one anyway, e.g. after a lost worker or an
    unreachable broker). True when this call queued it.

    Called after a rating's transaction commits (watch_after_commit), outside it: the study's
    one watch row is then locked for a single UPDATE, not for the length of every rating's
    transaction (which would serialise a study's submissions). One query when it claims the
    refresh, two in a burst (already queued), an INSERT the first time.
    """
    now = timezone.now()
    free = Q() if force else Q(requested_at__isnull=True) | Q(requested_at__lt=now - STALE_REQUEST)
    claimed = AgreementWatch.objects.filter(free, study_id=study_id).update(requested_at=now)
    if not claimed:
        _, claimed = AgreementWatch.objects.get_or_create(
            study_id=study_id, defaults={"requested_at": now}
        )
    if claimed:
        _send(study_id)
    return bool(claimed)


def watch_after_commit(*, study_id: int) -> None:
    """Request a refresh once the current transaction commits. A failure there is logged and
    never turns the saved rating into an error page."""

    def request() -> None:
        try:
            request_watch_refresh(study_id=study_id)
        except Exception:
            logger.exception("could not request the agreement watch refresh of study %s", study_id)

    transaction.on_commit(request)


def _send(study_id: int) -> None:
    """Send the refresh; a broker that cannot be reached is recorded for the dashboard (the
    rating it follows is saved either way) and the request released for the next rating."""
    try:
        current_app.send_task(
            task_names.REFRESH_WATCH,
            args=[study_id],
            countdown=settings.MEDHELM_WATCH_DEBOUNCE_SECONDS,
        )
    except Exception as exc:
        logger.exception("could not send the agreement watch refresh of study %s", study_id)
        AgreementWatch.objects.filter(study_id=study_id).update(
            requested_at=None,
            error=f"the refresh could not be sent to a worker: {type(exc).__name__}: {exc}",
            error_at=timezone.now(),
        )


def start_watch_refresh(*, study_id: int) -> int:
    """A worker starts a refresh: release the request (ratings arriving from now on queue the
    next one) and return how many assignments are submitted now."""
    AgreementWatch.objects.get_or_create(study_id=study_id)
    AgreementWatch.objects.filter(study_id=study_id).update(requested_at=None)
    return Assignment.objects.filter(study_id=study_id, status=Assignment.Status.SUBMITTED).count()


def record_watch_snapshot(*, study_id: int, summary: dict[str, Any], submissions: int) -> None:
    """Store a computed snapshot (and clear an earlier failure)."""
    AgreementWatch.objects.filter(study_id=study_id).update(
        summary=summary,
        computed_at=timezone.now(),
        submissions_seen=submissions,
        error="",
        error_at=None,
    )


def record_watch_failure(*, study_id: int, reason: str) -> None:
    """Keep the last snapshot and say on the dashboard why it could not be refreshed."""
    AgreementWatch.objects.filter(study_id=study_id).update(
        error=reason[:2000], error_at=timezone.now()
    )
