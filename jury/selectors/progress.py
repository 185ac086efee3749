"""A run's progress: its calls by outcome, tokens, cost and time left, and each judge's health.

Failure rates per judge and per status are reported, not dropped (HELM drops failed judges
and falls back to a default score; we do neither). The jury's aggregate score is derived
from the one score table in agreement.selectors, not here.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, Q, Sum
from django.utils import timezone

from jury.models import JudgeCall, JuryRun
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
