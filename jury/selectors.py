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
from delphi.models import TaxonomyNode
from jury import breakers, limits
from jury.models import JudgeAttempt, JudgeCall, JuryRun, PromptTemplate
from jury.run_estimate import MAX_SAMPLES, Estimate, estimate_remaining

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
    # "known" (eta_seconds holds it), "estimating" (no recent pace) or "none" (not running,
    # or nothing left): see jury.run_estimate.
    eta_state: str = "none"

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 100


def run_progress(*, run: JuryRun) -> RunProgress:
    """Calls done, failed and left, tokens and cost (cache hits are not billed again), and
    the time left at the pace of the recent finishes (jury.run_estimate) while the run is
    queued or running."""
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
    estimate = Estimate(None, "none")
    if run.status in (JuryRun.Status.QUEUED, JuryRun.Status.RUNNING) and agg["pending"]:
        finished = (
            run.calls.filter(finished_at__isnull=False, cached_from__isnull=True)
            .exclude(status=JudgeCall.Status.PENDING)
            .order_by("-finished_at")
            .values_list("finished_at", flat=True)[:MAX_SAMPLES]
        )
        estimate = estimate_remaining(
            finished_at=list(finished), pending=agg["pending"], now=timezone.now()
        )
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
        eta_seconds=estimate.seconds,
        by_status=by_status,
        eta_state=estimate.state,
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


@dataclass(frozen=True)
class FilterChoices:
    """What a run may be narrowed to: the study's evaluated models and the taxonomy nodes its
    items sit under (with their ancestors), each with its item count."""

    models: list[tuple[str, int]]
    nodes: list[tuple[int, str, int]]  # (id, "Category / Subcategory / Task", items)


def run_filter_choices(*, study: RatingStudy) -> FilterChoices:
    models = list(
        study.items.values_list("model_name").annotate(n=Count("id")).order_by("model_name")
    )
    per_node = dict(
        study.items.filter(taxonomy_node__isnull=False)
        .values_list("taxonomy_node")
        .annotate(n=Count("id"))
        .values_list("taxonomy_node", "n")
    )
    known: dict[int, TaxonomyNode] = {}
    wanted = set(per_node)
    while wanted - set(known):
        for node in TaxonomyNode.objects.filter(pk__in=wanted - set(known)):
            known[node.pk] = node
            if node.parent_id is not None:
                wanted.add(node.parent_id)
    counts: dict[int, int] = defaultdict(int)
    for node_id, n in per_node.items():
        node: TaxonomyNode | None = known[node_id]
        while node is not None:  # an item counts for its node and every node above it
            counts[node.pk] += n
            node = known.get(node.parent_id) if node.parent_id is not None else None

    def path(node: TaxonomyNode) -> list[TaxonomyNode]:
        return (path(known[node.parent_id]) if node.parent_id is not None else []) + [node]

    rows = [(path(node), node) for node in known.values()]
    rows.sort(key=lambda r: [(n.position, n.pk) for n in r[0]])
    nodes = [(node.pk, " / ".join(n.name for n in p), counts[node.pk]) for p, node in rows]
    return FilterChoices(models=models, nodes=nodes)


#: Call statuses a resume sends again (jury.services.RETRIED_ON_RESUME), and truncated ones
#: (sent again when their judge's request changed; otherwise the resume says why not).
RESUMABLE_CALLS = (
    JudgeCall.Status.PROVIDER_ERROR,
    JudgeCall.Status.TIMEOUT,
    JudgeCall.Status.TRUNCATED,
)


def can_resume(*, run: JuryRun, progress: RunProgress) -> bool:
    """Resume is offered for a stopped (cancelled) or failed run, and for a finished one
    whose calls failed in a way a resume retries; never while the run is queued or running."""
    if run.status in (JuryRun.Status.CANCELLED, JuryRun.Status.FAILED):
        return True
    if run.status == JuryRun.Status.FINISHED:
        return any(progress.by_status.get(s, 0) for s in RESUMABLE_CALLS)
    return False


def eta_text(progress: RunProgress) -> str:
    """The time left as the run page says it: "about 40 s left", "about 12 min left",
    "time left: estimating…", or "" when the run is not under way."""
    if progress.eta_state == "estimating":
        return "time left: estimating…"
    if progress.eta_state != "known" or progress.eta_seconds is None:
        return ""
    seconds = progress.eta_seconds
    if seconds < 90:
        return f"about {max(1, round(seconds))} s left"
    if seconds < 90 * 60:
        return f"about {round(seconds / 60)} min left"
    return f"about {seconds / 3600:.1f} h left"


def run_status(*, run: JuryRun) -> dict[str, object]:
    """What the run page polls (and renders first): counts, state, time left, the wait for a
    worker, and which actions apply."""
    progress = run_progress(run=run)
    waiting = run_waiting(run=run)
    return {
        "id": run.pk,
        "status": run.status,
        "status_display": run.get_status_display(),
        "live": run.status in (JuryRun.Status.QUEUED, JuryRun.Status.RUNNING),
        "total": progress.total,
        "done": progress.done,
        "ok": progress.ok,
        "failed": progress.failed,
        "remaining": progress.remaining,
        "cached": progress.cached,
        "percent": progress.percent,
        "input_tokens": progress.input_tokens,
        "output_tokens": progress.output_tokens,
        "cost": f"{progress.cost:.4f}",
        "eta_seconds": None if waiting else progress.eta_seconds,
        "eta_state": "waiting" if waiting else progress.eta_state,
        "eta_text": "" if waiting else eta_text(progress),
        "waiting": waiting.text if waiting else "",
        "can_cancel": run.status in (JuryRun.Status.QUEUED, JuryRun.Status.RUNNING),
        "can_resume": can_resume(run=run, progress=progress),
        "judges": [
            {
                "judge": h.judge,
                "total": h.total,
                "by_status": [f"{status} {n}" for status, n in h.by_status.items()],
                "failure_rate": f"{round(100 * h.failure_rate)}%",
                "mean_latency": "\u2013"
                if h.mean_latency_ms is None
                else f"{round(h.mean_latency_ms)} ms",
                "cost": f"${h.cost:.4f}",
            }
            for h in judge_health(run=run)
        ],
    }
