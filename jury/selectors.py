"""Reads for the jury: run progress, failure rates, and the jury's aggregate scores.

Coverage is never hidden: every aggregate says how many judges contributed, and failure
rates per judge and per status are reported, not dropped (HELM drops failed judges and
falls back to a default score; we do neither).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, Q, Sum
from django.utils import timezone

from annotation.models import RatingStudy
from jury.models import JudgeCall, JudgeScore, JuryRun

FAILED = (
    JudgeCall.Status.INVALID,
    JudgeCall.Status.PROVIDER_ERROR,
    JudgeCall.Status.TIMEOUT,
    JudgeCall.Status.REFUSED,
)


@dataclass(frozen=True)
class RunProgress:
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


@dataclass(frozen=True)
class JuryItemScore:
    item_id: int
    criterion: str
    value: float
    n_judges: int


def jury_item_scores(*, study: RatingStudy) -> list[JuryItemScore]:
    """Per item and criterion: the weighted mean over judges with a valid verdict, and how
    many judges that was. Where a judge has several valid scores for one item (repeated
    runs), its latest counts."""
    latest: dict[tuple[int, str, int], tuple[float, float]] = {}
    rows = (
        JudgeScore.objects.filter(item__study=study, is_valid=True)
        .values_list("item_id", "criterion__key", "judge_id", "judge__weight", "value", "pk")
        .order_by("pk")
    )
    for item_id, key, judge_id, weight, value, _pk in rows:
        latest[(item_id, key, judge_id)] = (value, weight)
    sums: dict[tuple[int, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for (item_id, key, _judge), (value, weight) in latest.items():
        acc = sums[(item_id, key)]
        acc[0] += weight * value
        acc[1] += weight
        acc[2] += 1
    return [
        JuryItemScore(item_id=item_id, criterion=key, value=acc[0] / acc[1], n_judges=int(acc[2]))
        for (item_id, key), acc in sorted(sums.items())
    ]


def jury_composites(*, study: RatingStudy) -> dict[int, tuple[float, int]]:
    """Per item: the mean over criteria of the jury's per-criterion scores (MedHELM's default,
    equal weights), with the smallest number of judges behind any criterion."""
    per_item: dict[int, list[JuryItemScore]] = defaultdict(list)
    for s in jury_item_scores(study=study):
        per_item[s.item_id].append(s)
    return {
        item_id: (sum(s.value for s in scores) / len(scores), min(s.n_judges for s in scores))
        for item_id, scores in per_item.items()
    }
