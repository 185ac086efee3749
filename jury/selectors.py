"""Reads for the jury: a study's runs and prompt versions, run progress, failure rates.

Failure rates per judge and per status are reported, not dropped (HELM drops failed judges
and falls back to a default score; we do neither). The jury's aggregate score is derived
from the one score table in agreement.selectors, not here.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import Count, Max, Q, QuerySet, Sum
from django.db.models.functions import Coalesce, Substr
from django.utils import timezone

from annotation.models import RatingStudy
from jury import breakers, limits
from jury.models import JudgeAttempt, JudgeCall, JuryRun, PromptTemplate

FAILED = JudgeCall.FAILED_STATUSES


@dataclass(frozen=True)
class RunProgress:
    """Where a run stands: call counts by outcome, tokens, cost and an estimated finish."""

    total: int
    done: int
    ok: int
    failed: int
    remaining: int
    cached: int
    input_tokens: int
    output_tokens: int
    cost: Decimal
    eta_seconds: float | None
    by_status: dict[str, int]

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 100


def run_progress(*, run: JuryRun) -> RunProgress:
    """Calls done, failed and left, tokens and cost (cache hits are not billed again), and an
    ETA from the pace so far while the run is running."""
    agg = run.calls.aggregate(
        total=Count("id"),
        pending=Count("id", filter=Q(status=JudgeCall.Status.PENDING)),
        ok=Count("id", filter=Q(status=JudgeCall.Status.OK)),
        failed=Count("id", filter=Q(status__in=FAILED)),
        cached=Count("id", filter=Q(cached_from__isnull=False)),
        input_tokens=Sum("input_tokens", filter=Q(cached_from__isnull=True)),
        output_tokens=Sum("output_tokens", filter=Q(cached_from__isnull=True)),
        cost=Sum("cost"),
    )
    by_status = dict(
        run.calls.values_list("status").annotate(n=Count("id")).values_list("status", "n")
    )
    done = agg["total"] - agg["pending"]
    eta = None
    if run.started_at and done and agg["pending"] and run.status == JuryRun.Status.RUNNING:
        elapsed = (timezone.now() - run.started_at).total_seconds()
        eta = elapsed / done * agg["pending"]
    return RunProgress(
        total=agg["total"],
        done=done,
        ok=agg["ok"],
        failed=agg["failed"],
        remaining=agg["pending"],
        cached=agg["cached"],
        input_tokens=agg["input_tokens"] or 0,
        output_tokens=agg["output_tokens"] or 0,
        cost=agg["cost"] or Decimal(0),
        eta_seconds=eta,
        by_status=by_status,
    )


@dataclass(frozen=True)
class JudgeHealth:
    """One judge's calls in a run: counts by status, failure rate, latency and cost."""

    judge: str
    total: int
    by_status: dict[str, int]
    failure_rate: float
    mean_latency_ms: float | None
    cost: Decimal


def judge_health(*, run: JuryRun) -> list[JudgeHealth]:
    """Calls per judge and status, failure rate (any status but ok), latency and cost."""
    rows = defaultdict(lambda: {"by_status": {}, "total": 0})
    for name, status, n in (
        run.calls.values_list("judge__name", "status")
        .annotate(n=Count("id"))
        .order_by("judge__name")
    ):
        rows[name]["by_status"][status] = n
        rows[name]["total"] += n
    extra = {
        r["judge__name"]: r
        for r in run.calls.values("judge__name").annotate(
            latency=Sum("latency_ms", filter=Q(cached_from__isnull=True, latency_ms__isnull=False)),
            timed=Count("id", filter=Q(cached_from__isnull=True, latency_ms__isnull=False)),
            cost=Sum("cost"),
        )
    }
    out = []
    for name, row in rows.items():
        finished = row["total"] - row["by_status"].get(JudgeCall.Status.PENDING, 0)
        failed = sum(row["by_status"].get(s, 0) for s in FAILED)
        e = extra.get(name, {})
        out.append(
            JudgeHealth(
                judge=name,
                total=row["total"],
                by_status=row["by_status"],
                failure_rate=failed / finished if finished else 0.0,
                mean_latency_ms=(e.get("latency") or 0) / e["timed"] if e.get("timed") else None,
                cost=e.get("cost") or Decimal(0),
            )
        )
    return out


RECENT_RUNS = 30
CALL_COLUMNS = (
    "call_id",
    "judge",
    "item_id",
    "external_id",
    "status",
    "attempts",
    "finish_reason",
    "input_tokens",
    "output_tokens",
    "cost",
    "latency_ms",
    "cached_from",
    "prompt_hash",
    "error",
    "flags",
)


def study_run(*, study: RatingStudy, run_id: int) -> JuryRun | None:
    """The study's run with this id, or None (a run of another study is not found)."""
    return JuryRun.objects.filter(study=study, pk=run_id).first()


def recent_runs(*, study: RatingStudy) -> list[tuple[JuryRun, RunProgress]]:
    """The study's latest runs, each with its progress, for the runs page."""
    runs = study.jury_runs.prefetch_related("judges")[:RECENT_RUNS]
    return [(run, run_progress(run=run)) for run in runs]


def call_rows(*, run: JuryRun) -> Iterator[tuple]:
    """Every call of a run in CALL_COLUMNS order, streamed from the database."""
    calls = run.calls.select_related("judge", "item").order_by("pk")
    for c in calls.iterator(chunk_size=2000):
        yield (
            c.pk,
            c.judge.name,
            c.item_id,
            c.item.external_id,
            c.status,
            c.attempts,
            c.finish_reason,
            c.input_tokens,
            c.output_tokens,
            c.cost,
            c.latency_ms,
            c.cached_from_id,
            c.prompt_hash,
            c.error,
            ";".join(flag["code"] for flag in c.flags or []),
        )


def latest_prompt_template(*, study: RatingStudy) -> PromptTemplate | None:
    """The study's most recently saved prompt version, or None when it has none."""
    return PromptTemplate.objects.filter(study=study).order_by("-created_at", "-version").first()


def prompt_versions(*, study: RatingStudy) -> QuerySet[PromptTemplate]:
    """The study's prompt versions, newest first."""
    return PromptTemplate.objects.filter(study=study).order_by("-created_at")


# --- a run's attempt history: its top error reasons, every attempt -----------------------------

TOP_ERROR_REASONS = 10
# Reasons are grouped on their first characters: the provider's message, not what follows.
ERROR_REASON_CHARS = 160


@dataclass(frozen=True)
class ErrorReason:
    """Failed attempts of a run with one outcome kind and (short) reason."""

    kind: str
    reason: str
    count: int


@dataclass(frozen=True)
class RunErrors:
    """A run's attempts over all its executions, how many failed, and the top reasons."""

    attempts: int
    failed: int
    top: list[ErrorReason]


def run_errors(*, run: JuryRun, limit: int = TOP_ERROR_REASONS) -> RunErrors:
    """The run's failed attempts (any outcome but ok, resumed calls' earlier failures
    included) grouped by kind and reason, most frequent first."""
    attempts = JudgeAttempt.objects.filter(call__run=run)
    totals = attempts.aggregate(attempts=Count("id"), failed=Count("id", filter=~Q(outcome="ok")))
    top = (
        attempts.exclude(outcome="ok")
        .annotate(reason=Substr("error", 1, ERROR_REASON_CHARS))
        .values_list("outcome", "reason")
        .annotate(n=Count("id"))
        .order_by("-n", "outcome", "reason")[:limit]
    )
    return RunErrors(
        attempts=totals["attempts"],
        failed=totals["failed"],
        top=[ErrorReason(kind=kind, reason=reason, count=n) for kind, reason, n in top],
    )


ATTEMPT_COLUMNS = ("call_id", "judge", "item_id", *JudgeAttempt.RECORD_FIELDS)


def attempt_rows(*, run: JuryRun) -> Iterator[tuple]:
    """Every request sent for a run's calls, in ATTEMPT_COLUMNS order, streamed."""
    rows = (
        JudgeAttempt.objects.filter(call__run=run)
        .order_by("call_id", "number")
        .values_list("call_id", "call__judge__name", "call__item_id", *JudgeAttempt.RECORD_FIELDS)
    )
    started = ATTEMPT_COLUMNS.index("started_at")
    for row in rows.iterator(chunk_size=2000):
        yield (*row[:started], row[started].isoformat(), *row[started + 1 :])


def truncated_calls(*, run: JuryRun) -> int:
    """The run's calls cut at max_tokens: a resume leaves them until their judge's request
    changes (jury.services.RETRIED_ON_RESUME), so pages and commands say how many stay."""
    return run.calls.filter(status=JudgeCall.Status.TRUNCATED).count()


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


FLAGGED_CALLS_SHOWN = 100


@dataclass(frozen=True)
class FlaggedCall:
    """A call whose verdict the evaluated response may have steered (jury.verdict_flags)."""

    call_id: int
    judge: str
    item_id: int
    external_id: str
    flags: list[dict[str, str]]


@dataclass(frozen=True)
class RunFlags:
    """A run's flagged verdicts: counts per judge (of its ok calls) and the first calls."""

    verdicts: int  # ok calls, each with a verdict
    flagged: int
    by_judge: list[tuple[str, int, int]]  # judge, flagged, verdicts
    calls: list[FlaggedCall]  # at most FLAGGED_CALLS_SHOWN


def run_flags(*, run: JuryRun) -> RunFlags:
    """How many of the run's verdicts are flagged, per judge, and the flagged calls with
    their reasons (the first FLAGGED_CALLS_SHOWN; the calls CSV has every one)."""
    ok = run.calls.filter(status=JudgeCall.Status.OK)
    flagged = ok.exclude(flags=[])
    by_judge = [
        (row["judge__name"], row["flagged"], row["verdicts"])
        for row in ok.values("judge__name")
        .annotate(verdicts=Count("id"), flagged=Count("id", filter=~Q(flags=[])))
        .order_by("judge__name")
    ]
    calls = [
        FlaggedCall(
            call_id=c.pk,
            judge=c.judge.name,
            item_id=c.item_id,
            external_id=c.item.external_id,
            flags=c.flags,
        )
        for c in flagged.select_related("judge", "item").order_by("pk")[:FLAGGED_CALLS_SHOWN]
    ]
    return RunFlags(
        verdicts=sum(v for _j, _f, v in by_judge),
        flagged=sum(f for _j, f, _v in by_judge),
        by_judge=by_judge,
        calls=calls,
    )
