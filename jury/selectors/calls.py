"""What a run's calls were and what went wrong with them: every call and every attempt as
rows (the CSV downloads), the top error reasons, the calls cut at max_tokens, the verdicts
the evaluated response may have steered."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from django.db.models import Count, Q
from django.db.models.functions import Substr

from jury.models import JudgeAttempt, JudgeCall, JuryRun

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
