"""Why an active run does not move: its calls wait for a worker, or its judges' provider
cannot be reached (jury.breakers)."""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Max, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from jury import breakers, limits
from jury.models import JudgeCall, JuryRun

# A worker between two chunks holds no call for a moment: a run is called waiting only
# after its calls sat unheld, with nothing sent or ended, for this long.
WAITING_AFTER_SECONDS = 10.0


@dataclass(frozen=True)
class RunWaiting:
    """An active run whose pending calls no live worker holds: how many, since when (the
    run's last activity: a call sent or ended), how often the sweep sent them again."""

    calls: int
    since: datetime
    redispatches: int

    @property
    def text(self) -> str:
        since = timezone.localtime(self.since)
        return (
            f"{self.calls} call{'s' if self.calls != 1 else ''} waiting for a worker since "
            f"{since:%H:%M}; re-dispatched {self.redispatches} "
            f"time{'s' if self.redispatches != 1 else ''}"
        )


def run_waiting(*, run: JuryRun, now: datetime | None = None) -> RunWaiting | None:
    """The run's wait for a worker (shown instead of an ETA), or None while a worker holds
    one of its calls, or it is not queued or running."""
    if run.status not in (JuryRun.Status.QUEUED, JuryRun.Status.RUNNING):
        return None
    pending = Q(status=JudgeCall.Status.PENDING)
    held = limits.held_call_ids()
    if held and run.calls.filter(pending, pk__in=held).exists():
        return None
    agg = run.calls.aggregate(
        calls=Count("id", filter=pending),
        last_ended=Max("finished_at", filter=~pending),
        last_sent=Max(Coalesce("dispatched_at", "created_at")),
        redispatches=Max("sweeps", filter=pending),
    )
    if not agg["calls"]:
        return None
    since = max(t for t in (agg["last_ended"], agg["last_sent"], run.started_at) if t)
    if ((now or timezone.now()) - since).total_seconds() < WAITING_AFTER_SECONDS:
        return None
    return RunWaiting(calls=agg["calls"], since=since, redispatches=agg["redispatches"] or 0)


@dataclass(frozen=True)
class ProviderOutage:
    """A provider the run's judges cannot reach now (jury.breakers): their calls wait."""

    judges: tuple[str, ...]
    since: float  # epoch seconds: the same outage keeps it
    reason: str  # "provider unreachable since 14:03:12 (16 minutes)"
    last_error: str


def provider_outages(*, run: JuryRun) -> list[ProviderOutage]:
    """The endpoints of the run's judges that are unreachable now, while the run is active."""
    if run.status not in (JuryRun.Status.QUEUED, JuryRun.Status.RUNNING):
        return []
    judges_of: dict[str, list[str]] = defaultdict(list)
    for judge in run.judges.all():
        judges_of[breakers.endpoint_key(judge)].append(judge.name)
    now, tz = time.time(), timezone.get_current_timezone()
    found = breakers.board().outages(sorted(judges_of))
    return [
        ProviderOutage(
            judges=tuple(sorted(judges_of[endpoint])),
            since=state.opened_at or now,
            reason=breakers.unreachable_reason(state, now=now, tz=tz),
            last_error=state.last_error,
        )
        for endpoint, state in sorted(found.items())
    ]
