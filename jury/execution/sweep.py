"""The sweep (a Celery beat task): every pending call is held by a live worker or is sent
again, a call no worker takes ends with a visible status, and a run with no pending call
left is marked finished, whatever happened to the worker that ran its last call.

A call is orphaned when it is pending in a queued or running run, no live worker holds it
(a Redis claim of a living owner, an unexpired database lease) and it was last sent more
than the grace period ago: a call that gave up its wait for a slot, a chunk whose worker
died, a dispatch that never reached the broker. Calls merely queued in the broker behind
other work are not held either, and nothing tells them from lost ones; so the sweep acts
only while the jury is idle, with no call held anywhere and none finished within the grace
period (a busy jury is draining its queue; a queued call sent again would only be counted
as swept, and failed at the bound, while it still waits its turn).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone

from jury import limits
from jury.execution import storage
from jury.models import JudgeCall, JuryRun
from jury.services import dispatch_calls

log = logging.getLogger(__name__)

ACTIVE = (JuryRun.Status.QUEUED, JuryRun.Status.RUNNING)


@dataclass(frozen=True)
class SweepSettings:
    interval_seconds: float
    grace_seconds: float
    max_sweeps: int

    @property
    def ends_a_stall_within_seconds(self) -> float:
        """How long a run can wait for a worker while the sweep runs: each re-dispatch
        after a grace period and an interval, then the last one ends the calls."""
        return (self.max_sweeps + 1) * (self.grace_seconds + self.interval_seconds)


def sweep_settings() -> SweepSettings:
    """settings.JURY_SWEEP_INTERVAL_SECONDS, JURY_SWEEP_GRACE_SECONDS and
    JURY_SWEEP_MAX_REDISPATCHES."""
    return SweepSettings(
        interval_seconds=float(getattr(settings, "JURY_SWEEP_INTERVAL_SECONDS", 60)),
        grace_seconds=float(getattr(settings, "JURY_SWEEP_GRACE_SECONDS", 300)),
        max_sweeps=int(getattr(settings, "JURY_SWEEP_MAX_REDISPATCHES", 3)),
    )


@dataclass(frozen=True)
class SweepReport:
    finished_runs: int = 0
    redispatched: int = 0
    failed: int = 0
    busy: bool = False  # the jury was working: nothing was sent again


def sweep_calls(*, now: datetime | None = None) -> SweepReport:
    """Finish the runs with nothing pending; while the jury is idle, send orphaned calls
    again, and end with provider_error those already sent again the maximum number of times."""
    now = now or timezone.now()
    config = sweep_settings()
    runs = list(
        JuryRun.objects.filter(status__in=ACTIVE, cancel_requested=False).values_list(
            "pk", flat=True
        )
    )
    finished = sum(storage.finish_run_if_done(run_id) for run_id in runs)
    cutoff = now - timedelta(seconds=config.grace_seconds)
    active_calls = JudgeCall.objects.filter(run__status__in=ACTIVE, run__cancel_requested=False)
    recently_ended = active_calls.exclude(status=JudgeCall.Status.PENDING).filter(
        finished_at__gte=cutoff
    )
    if limits.held_call_ids() or recently_ended.exists():
        return SweepReport(finished_runs=finished, busy=True)
    orphans = list(
        active_calls.filter(status=JudgeCall.Status.PENDING)
        .annotate(sent_at=Coalesce("dispatched_at", "created_at"))
        .filter(sent_at__lt=cutoff)
        .values_list("pk", "run_id", "sweeps")
    )
    if not orphans:
        return SweepReport(finished_runs=finished)
    exhausted = [row for row in orphans if row[2] >= config.max_sweeps]
    again = [row[0] for row in orphans if row[2] < config.max_sweeps]
    failed = _end_exhausted(exhausted, max_sweeps=config.max_sweeps, now=now)
    if again:
        for batch in _batches(again):
            JudgeCall.objects.filter(pk__in=batch).update(sweeps=F("sweeps") + 1)
        by_run = _count_by_run(row for row in orphans if row[2] < config.max_sweeps)
        log.warning(
            "jury sweep: %s pending calls no worker held were sent again (calls by run: %s)",
            len(again),
            by_run,
        )
        dispatch_calls(again)
    finished += sum(storage.finish_run_if_done(run_id) for run_id in {r[1] for r in exhausted})
    return SweepReport(finished_runs=finished, redispatched=len(again), failed=failed)


def _end_exhausted(rows: list[tuple], *, max_sweeps: int, now: datetime) -> int:
    """End as provider_error the calls no worker took after `max_sweeps` sends; how many."""
    if not rows:
        return 0
    reason = (
        f"no worker could take this call after {max_sweeps} re-dispatches by the sweep; "
        "resume the run to try again"
    )
    ended = sum(
        JudgeCall.objects.filter(pk__in=batch, status=JudgeCall.Status.PENDING).update(
            status=JudgeCall.Status.PROVIDER_ERROR, error=reason, finished_at=now
        )
        for batch in _batches([row[0] for row in rows])
    )
    log.warning("jury sweep: calls ended (calls by run: %s): %s", _count_by_run(rows), reason)
    return ended


def _batches(ids: list[int], size: int = 2000) -> Iterator[list[int]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


def _count_by_run(rows: Iterable[tuple]) -> dict[int, int]:
    counts: dict[int, int] = defaultdict(int)
    for row in rows:
        counts[row[1]] += 1
    return dict(sorted(counts.items()))
