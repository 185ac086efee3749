"""Storing how judge calls ended, and serving identical earlier requests from the cache.

Shared by the per-call path (single.py) and the chunk path (chunks.py), so both store
exactly the same thing: the call's fields, its scores parsed from the judge's verdict, its
cost; a call no longer pending (another worker finished it first) keeps what it has.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from annotation.models import Item, RubricCriterion
from jury.execution import bulk
from jury.execution.attempts import AttemptRecord
from jury.execution.bulk import cursor as _cursor
from jury.execution.bulk import unnest as _unnest
from jury.execution.history import AttemptHistory, lock_calls
from jury.models import Judge, JudgeCall, JudgeScore, JuryRun
from jury.providers import base as providers
from jury.timing import max_tokens_of
from jury.verdict_flags import ScoredCriterion, verdict_flags
from jury.verdicts import parse_verdict

logger = logging.getLogger(__name__)


def call_cost(judge: Judge, input_tokens: int | None, output_tokens: int | None) -> Decimal | None:
    if input_tokens is None and output_tokens is None:
        return None
    million = Decimal(1_000_000)
    return (
        Decimal(input_tokens or 0) * judge.price_input_per_mtok
        + Decimal(output_tokens or 0) * judge.price_output_per_mtok
    ) / million


def finish_run_if_done(run_id: int) -> bool:
    """Mark the run finished once no call is pending: one statement, a no-op otherwise.
    Whether this marked it."""
    return (
        JuryRun.objects.filter(
            pk=run_id, status__in=[JuryRun.Status.QUEUED, JuryRun.Status.RUNNING]
        )
        .filter(
            ~Exists(
                JudgeCall.objects.filter(run_id=OuterRef("pk"), status=JudgeCall.Status.PENDING)
            )
        )
        .update(status=JuryRun.Status.FINISHED, finished_at=timezone.now())
        > 0
    )


def mark_running(run_ids: Iterable[int]) -> None:
    JuryRun.objects.filter(pk__in=list(run_ids), status=JuryRun.Status.QUEUED).update(
        status=JuryRun.Status.RUNNING, started_at=timezone.now()
    )


def study_criteria(study_id: int) -> tuple[tuple[providers.CriterionSpec, ...], dict[str, int]]:
    rows = list(RubricCriterion.objects.filter(study_id=study_id))  # the rubric's order
    specs = tuple(providers.CriterionSpec.of(c) for c in rows)
    return specs, {c.key: c.pk for c in rows}


def build_request(
    call: JudgeCall, judge: Judge, criteria: tuple[providers.CriterionSpec, ...]
) -> providers.JudgeRequest:
    return providers.JudgeRequest(
        system=call.system_text,
        prompt=call.prompt_text,
        criteria=criteria,
        temperature=float(judge.params.get("temperature", 0.0)),
        max_tokens=max_tokens_of(judge.params),
        timeout_seconds=judge.request_timeout_seconds,
    )


# --- storing outcomes ---------------------------------------------------------------------------


@dataclass
class Outcome:
    """How one call ended. status None: it did not end (cancelled, no slot in time).
    `attempt_log` holds every request sent for it in this execution, failed or not."""

    call_id: int
    status: str | None
    reply: providers.JudgeReply | None = None
    error: str = ""
    attempts: int = 0
    latency_ms: int | None = None
    source: CachedSource | None = None  # served from the cache: the billed original
    attempt_log: list[AttemptRecord] = field(default_factory=list)


def refused_outcome(call_id: int, reason: str) -> Outcome:
    """A call the operator's rules refuse to send (Judge.policy_problems): failed, no attempt."""
    return Outcome(call_id=call_id, status=JudgeCall.Status.PROVIDER_ERROR, error=reason)


@dataclass(frozen=True)
class CachedSource:
    pk: int
    raw_output: str
    scores: tuple[tuple[int, float | None, bool, str], ...]  # criterion, value, valid, why
    finish_reason: str = ""


_UPDATED_FIELDS = (
    "status",
    "attempts",
    "latency_ms",
    "error",
    "finished_at",
    "raw_output",
    "input_tokens",
    "output_tokens",
    "cost",
    "cached_from",
    "finish_reason",
)


# A score row as inserted: criterion, value, is_valid, explanation (plus the call's ids).
_ScoreRow = tuple[int, float | None, bool, str]


def _apply(
    call: JudgeCall, outcome: Outcome, criteria_ids: dict[str, int], criteria: tuple
) -> list[_ScoreRow]:
    """Set the outcome's fields on `call` (in memory); returns the scores to insert."""
    call.finished_at = timezone.now()
    if outcome.source is not None:  # a copy of an earlier identical request, at no cost
        call.status = JudgeCall.Status.OK
        call.raw_output = outcome.source.raw_output
        call.cached_from_id = outcome.source.pk
        call.finish_reason = outcome.source.finish_reason
        call.cost = Decimal(0)
        call.latency_ms = 0
        call.error = ""
        return list(outcome.source.scores)
    status = outcome.status
    call.latency_ms = outcome.latency_ms
    call.error = outcome.error[:5000]
    scores: list[_ScoreRow] = []
    reply = outcome.reply
    if reply is not None:
        call.raw_output = reply.text
        call.finish_reason = (reply.finish_reason or "")[:32]
        call.input_tokens = reply.input_tokens
        call.output_tokens = reply.output_tokens
        call.cost = call_cost(call.judge, reply.input_tokens, reply.output_tokens)
        if status == JudgeCall.Status.OK:
            verdict = parse_verdict(reply.text, criteria)
            if not verdict.ok:
                status, call.error = unparsed_verdict(call.judge, reply, verdict.reason)
            for cv in verdict.criteria:
                if cv.key in criteria_ids:
                    scores.append(
                        (
                            criteria_ids[cv.key],
                            cv.value,
                            cv.valid and verdict.ok,
                            cv.explanation if cv.valid else cv.reason,
                        )
                    )
    call.status = status
    return scores


def unparsed_verdict(judge: Judge, reply: providers.JudgeReply, reason: str) -> tuple[str, str]:
    """The status and error of an answer whose verdict does not parse: `truncated`, with
    what to do, when the provider cut it at max_tokens (the parser's complaint about a cut
    JSON would only mislead); else an invalid verdict and the parser's reason."""
    if not reply.cut_at_max_tokens:
        return JudgeCall.Status.INVALID, reason
    return JudgeCall.Status.TRUNCATED, (
        f"truncated: the reply stopped at judge {judge.name!r}'s max_tokens "
        f"({max_tokens_of(judge.params)}; finish_reason {reply.finish_reason!r}) before the "
        "verdict was complete. Raise max_tokens in the judge's params (or ask for shorter "
        "explanations), then resume the run: a truncated call is sent again once the "
        "judge's request has changed."
    )


# The writes below run for every batch of answers: written out, one statement per batch on
# PostgreSQL (jury.execution.bulk says why).


def _update_calls(calls: Sequence[JudgeCall]) -> None:
    """Write the calls' outcome fields; the prompt, the largest field, is never rewritten."""
    meta = JudgeCall._meta
    fields = [meta.get_field(name) for name in _UPDATED_FIELDS]
    qn = connection.ops.quote_name
    # Only the date and the decimal need the backend's adaptation (SQLite stores them as
    # text in Django's own format); strings, integers and None go as they are.
    adapt = {"finished_at", "cost"}
    prepare = [
        (lambda v, f=f: f.get_db_prep_save(v, connection)) if f.name in adapt else None
        for f in fields
    ]
    attnames = [f.attname for f in fields]
    rows = [
        [
            getattr(call, name) if conv is None else conv(getattr(call, name))
            for name, conv in zip(attnames, prepare, strict=True)
        ]
        + [call.pk]
        for call in calls
    ]
    table, pk = qn(meta.db_table), qn(meta.pk.column)
    if connection.vendor == "postgresql":
        source, arrays = _unnest([*fields, meta.pk], rows)
        names = [qn(f.column) for f in fields]
        sql = (
            f"UPDATE {table} SET "
            + ", ".join(f"{name} = v.{name}" for name in names)
            + f" FROM {source} AS v({', '.join([*names, pk])}) WHERE {table}.{pk} = v.{pk}"
        )
        with _cursor() as cursor:
            cursor.execute(sql, arrays)
        return
    sql = (
        f"UPDATE {table} SET "
        + ", ".join(f"{qn(f.column)} = %s" for f in fields)
        + f" WHERE {pk} = %s"
    )
    with _cursor() as cursor:
        cursor.executemany(sql, rows)


_SCORE_COLUMNS = (
    "item",
    "judge",
    "criterion",
    "call",
    "value",
    "is_valid",
    "explanation",
    "created_at",
)


def _insert_scores(rows: Sequence[tuple]) -> None:
    """Insert score rows (in _SCORE_COLUMNS order)."""
    bulk.insert_rows(JudgeScore, _SCORE_COLUMNS, rows)


def save_outcomes(
    outcomes: Sequence[Outcome],
    *,
    calls: dict[int, JudgeCall],
    criteria: dict[int, tuple[tuple, dict[str, int]]],
) -> dict[int, str]:
    """Store outcomes in one transaction: an ended one sets its call's fields and scores, but
    a call no longer pending (another worker finished it first) keeps what it has; every
    outcome's attempts join its call's history, whether it ended the call or not (history.py).
    Returns the final status of each call ended here."""
    kept = [o for o in outcomes if o.status is not None or o.source is not None or o.attempt_log]
    if not kept:
        return {}
    created_at = JudgeScore._meta.get_field("created_at").get_db_prep_save(
        timezone.now(), connection
    )
    rows: list[JudgeCall] = []
    scores: list[tuple] = []
    history = AttemptHistory()
    with transaction.atomic():
        locked = lock_calls([o.call_id for o in kept])
        for outcome in kept:
            if outcome.call_id not in locked:  # deleted meanwhile
                continue
            status, before = locked[outcome.call_id]
            ends = outcome.status is not None or outcome.source is not None
            if not ends or status != JudgeCall.Status.PENDING:
                history.add_to_unchanged(outcome.call_id, outcome.attempt_log, before=before)
                continue
            call = calls[outcome.call_id]
            specs, ids = criteria[call.run.study_id]
            for criterion_id, value, is_valid, explanation in _apply(call, outcome, ids, specs):
                scores.append(
                    (
                        call.item_id,
                        call.judge_id,
                        criterion_id,
                        call.pk,
                        value,
                        is_valid,
                        explanation,
                        created_at,
                    )
                )
            call.attempts = history.add(call, outcome.attempt_log, before=before)
            rows.append(call)
        if rows:
            _update_calls(rows)
            _insert_scores(scores)
            _store_flags(rows, scores, criteria)
        history.write()
    return {call.pk: call.status for call in rows}


def _store_flags(
    calls: Sequence[JudgeCall],
    scores: Sequence[tuple],
    criteria: dict[int, tuple[tuple, dict[str, int]]],
) -> None:
    """Flag the stored verdicts the evaluated response may have steered (jury.verdict_flags),
    logging each flag; writes only the calls whose flags changed (usually none). One query
    for the judged items' texts."""
    column = {name: i for i, name in enumerate(_SCORE_COLUMNS)}
    by_call: dict[int, list[tuple]] = {}
    for row in scores:
        by_call.setdefault(row[column["call"]], []).append(row)
    judged = {c.pk for c in calls if c.status == JudgeCall.Status.OK and c.pk in by_call}
    texts = _item_texts({c.item_id for c in calls if c.pk in judged})
    changed = []
    for call in calls:
        flags: list[dict[str, str]] = []
        if call.pk in judged:
            specs, ids = criteria[call.run.study_id]
            spec_of = {ids[spec.key]: spec for spec in specs if spec.key in ids}
            verdict = [
                ScoredCriterion(
                    key=spec_of[row[column["criterion"]]].key,
                    value=row[column["value"]] if row[column["is_valid"]] else None,
                    explanation=row[column["explanation"]] or "",
                    scale_min=spec_of[row[column["criterion"]]].scale_min,
                    scale_max=spec_of[row[column["criterion"]]].scale_max,
                )
                for row in by_call[call.pk]
            ]
            response, context = texts[call.item_id]
            found = verdict_flags(response=response, scores=verdict, context=context)
            flags = [f.as_json() for f in found]
        if flags != (call.flags or []):
            call.flags = flags
            changed.append(call)
        for flag in flags:
            logger.warning("judge call %s flagged %s: %s", call.pk, flag["code"], flag["message"])
    if changed:
        JudgeCall.objects.bulk_update(changed, ["flags"])


def _item_texts(item_ids: set[int]) -> dict[int, tuple[str, tuple[str, str]]]:
    """item id -> (its output, (its input, its reference)); no query for no items."""
    if not item_ids:
        return {}
    rows = Item.objects.filter(pk__in=item_ids).values_list(
        "pk", "output_text", "input_text", "reference_text"
    )
    return {pk: (output, (question, reference)) for pk, output, question, reference in rows}


def cache_sources(calls: Sequence[JudgeCall]) -> dict[tuple[int, str], CachedSource]:
    """Earlier ok calls with the same judge and prompt hash (the first one, which is the
    billed original or points at it), with their scores: two queries for a whole chunk."""
    if not calls:
        return {}
    found: dict[tuple[int, str], dict[str, Any]] = {}
    rows = (
        JudgeCall.objects.filter(
            judge_id__in={c.judge_id for c in calls},
            prompt_hash__in={c.prompt_hash for c in calls},
            status=JudgeCall.Status.OK,
        )
        .order_by("pk")
        .values("pk", "judge_id", "prompt_hash", "raw_output", "cached_from_id", "finish_reason")
    )
    for row in rows:
        found.setdefault((row["judge_id"], row["prompt_hash"]), row)
    if not found:
        return {}
    scores: dict[int, list[tuple]] = {}
    for s in JudgeScore.objects.filter(call_id__in=[r["pk"] for r in found.values()]).values_list(
        "call_id", "criterion_id", "value", "is_valid", "explanation"
    ):
        scores.setdefault(s[0], []).append(s[1:])
    return {
        key: CachedSource(
            pk=row["cached_from_id"] or row["pk"],  # always point at the billed original
            raw_output=row["raw_output"],
            scores=tuple(scores.get(row["pk"], ())),
            finish_reason=row["finish_reason"],
        )
        for key, row in found.items()
    }
