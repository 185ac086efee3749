"""Reads for the jury: a study's runs and prompt versions, run progress, failure rates.

Failure rates per judge and per status are reported, not dropped (HELM drops failed judges
and falls back to a default score; we do neither). The jury's aggregate score is derived
from the one score table in agreement.selectors, not here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from annotation.models import RatingStudy
from jury.models import JudgeCall, JuryRun, PromptTemplate

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
