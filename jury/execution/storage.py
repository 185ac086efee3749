"""Storing how judge calls ended, and serving identical earlier requests from the cache.

Shared by the per-call path (single.py) and the chunk path (chunks.py), so both store
exactly the same thing: the call's fields, its scores parsed from the judge's verdict, its
cost; a call no longer pending (another worker finished it first) keeps what it has.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db import connection, transaction
from django.db.models import Exists, Field, OuterRef
from django.utils import timezone

from annotation.models import Item, RubricCriterion
from jury.execution.attempts import AttemptRecord
from jury.models import Judge, JudgeCall, JudgeScore, JuryRun
from jury.providers import base as providers
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


def finish_run_if_done(run_id: int) -> None:
    """Mark the run finished once no call is pending: one statement, a no-op otherwise."""
    JuryRun.objects.filter(
        pk=run_id, status__in=[JuryRun.Status.QUEUED, JuryRun.Status.RUNNING]
    ).filter(
        ~Exists(JudgeCall.objects.filter(run_id=OuterRef("pk"), status=JudgeCall.Status.PENDING))
    ).update(status=JuryRun.Status.FINISHED, finished_at=timezone.now())


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
        max_tokens=int(judge.params.get("max_tokens", 1024)),
        timeout_seconds=judge.timeout_seconds,
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
        call.cost = Decimal(0)
        call.latency_ms = 0
        call.error = ""
        return list(outcome.source.scores)
    status = outcome.status
    call.attempts = outcome.attempts
    call.latency_ms = outcome.latency_ms
    call.error = outcome.error[:5000]
    scores: list[_ScoreRow] = []
    reply = outcome.reply
    if reply is not None:
        call.raw_output = reply.text
        call.input_tokens = reply.input_tokens
        call.output_tokens = reply.output_tokens
        call.cost = call_cost(call.judge, reply.input_tokens, reply.output_tokens)
        if status == JudgeCall.Status.OK:
            verdict = parse_verdict(reply.text, criteria)
            if not verdict.ok:
                status = JudgeCall.Status.INVALID
                call.error = verdict.reason
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


# The statements below are written out rather than built by the ORM: they run for every
# answer of a large run, and building them (queryset, compiler, model instances) cost
# several times the database's own work. Names come from the models' metadata.


def _lock_pending(call_ids: Sequence[int]) -> set[int]:
    """Of these calls, the ones still pending, locked until the transaction ends."""
    meta = JudgeCall._meta
    qn = connection.ops.quote_name
    pk, status = qn(meta.pk.column), qn(meta.get_field("status").column)
    if connection.vendor == "postgresql":
        # One statement text for any number of ids, bound on the server: planned once.
        where, params = f"{pk} = ANY(%s)", [list(call_ids)]
    else:
        where, params = f"{pk} IN ({', '.join(['%s'] * len(call_ids))})", list(call_ids)
    sql = f"SELECT {pk} FROM {qn(meta.db_table)} WHERE {where} AND {status} = %s"
    if connection.features.has_select_for_update:
        sql += " FOR UPDATE"
    with _cursor() as cursor:
        cursor.execute(sql, [*params, JudgeCall.Status.PENDING.value])
        return {row[0] for row in cursor.fetchall()}


@contextmanager
def _cursor() -> Iterator[Any]:
    """Django's cursor; on PostgreSQL one that binds parameters on the server (psycopg's own
    cursor; Django uses psycopg's ClientCursor, which writes every value into the statement
    text in Python and makes each statement a new one for PostgreSQL to parse and plan),
    inside Django's wrapper (execute wrappers, error translation, query logging)."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            yield cursor
        return
    import psycopg

    connection.ensure_connection()
    raw = psycopg.Cursor(connection.connection)
    wrapped = (
        connection.make_debug_cursor(raw)
        if connection.queries_logged
        else connection.make_cursor(raw)
    )
    with wrapped as cursor:
        yield cursor


def _unnest(fields: Sequence[Field], rows: Sequence[Sequence[Any]]) -> tuple[str, list[list]]:
    """`unnest(%s::type[], ...)` over the rows' columns (in `fields` order), and its
    parameters: one array per column. PostgreSQL only."""
    sql = "unnest(" + ", ".join(f"%s::{f.db_type(connection)}[]" for f in fields) + ")"
    return sql, [list(column) for column in zip(*rows, strict=True)]


# The two writes below run for every batch of answers. On PostgreSQL each is one statement
# whatever the batch size, its rows sent as arrays with server-side binding: one text that
# PostgreSQL plans once per connection, and no per-row round of Python adaptation or
# statement execution (both cost less CPU, here and in PostgreSQL, than Django's client-side
# binding or a pipelined executemany: bench/bench_jury.py). SQLite, in-process, takes them
# as an executemany.


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
    if not rows:
        return
    meta = JudgeScore._meta
    qn = connection.ops.quote_name
    fields = [meta.get_field(name) for name in _SCORE_COLUMNS]
    insert = f"INSERT INTO {qn(meta.db_table)} ({', '.join(qn(f.column) for f in fields)})"
    if connection.vendor == "postgresql":
        source, arrays = _unnest(fields, rows)
        with _cursor() as cursor:
            cursor.execute(f"{insert} SELECT * FROM {source}", arrays)
        return
    with _cursor() as cursor:
        cursor.executemany(f"{insert} VALUES ({', '.join(['%s'] * len(fields))})", rows)


def save_outcomes(
    outcomes: Sequence[Outcome],
    *,
    calls: dict[int, JudgeCall],
    criteria: dict[int, tuple[tuple, dict[str, int]]],
) -> dict[int, str]:
    """Store finished outcomes in one transaction; a call no longer pending (another worker
    finished it first) keeps what it has. Returns each stored call's final status."""
    ended = [o for o in outcomes if o.status is not None or o.source is not None]
    if not ended:
        return {}
    created_at = JudgeScore._meta.get_field("created_at").get_db_prep_save(
        timezone.now(), connection
    )
    rows: list[JudgeCall] = []
    scores: list[tuple] = []
    with transaction.atomic():
        still_pending = _lock_pending([o.call_id for o in ended])
        for outcome in ended:
            if outcome.call_id not in still_pending:
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
            rows.append(call)
        if rows:
            _update_calls(rows)
            _insert_scores(scores)
            _store_flags(rows, scores, criteria)
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
        .values("pk", "judge_id", "prompt_hash", "raw_output", "cached_from_id")
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
        )
        for key, row in found.items()
    }
