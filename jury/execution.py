"""Running judge calls to their end: cache, limits, retries with backoff, verdict, scores.

Every call ends in exactly one status (ok, invalid verdict, provider error, timeout,
refused) with its raw output kept. Executing a call twice is harmless: a call that is no
longer pending is left alone, a call another live worker holds is waited for (it finishes
it, or dies and its claim lapses), and identical requests (same prompt hash) are served from
an earlier ok call at no cost.

Two ways to run calls, under the same rules:

- `execute_call(call_id=...)`: one call, synchronously, through the SDK's blocking client
  and `limits.acquire` (which polls). The per-call Celery task, `run_jury --inline` and the
  database limiter (SQLite, the embedded broker) use it.
- `execute_calls(call_ids=...)`: a chunk of calls, the Celery task `start_run` sends when the
  limits live in Redis. The provider requests of every chunk a worker process runs go
  through one asyncio event loop of that process (`_Engine`, a thread of its own) with the
  SDKs' async clients: one process keeps dozens of requests in flight without a thread
  each, and waits for the judge's Redis tokens without polling. The task's own thread does
  the database work: it loads the chunk in one query, serves cache hits, and stores the
  answers in batches as they arrive (one transaction per batch), so a killed worker loses
  only the requests in flight; those calls stay pending for a resume.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import queue
import random
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import httpx
from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from annotation.models import RubricCriterion
from jury import limits
from jury.models import Judge, JudgeCall, JudgeScore, JuryRun
from jury.providers import base as providers
from jury.providers import client_for
from jury.verdicts import parse_verdict

log = logging.getLogger(__name__)

DEFAULT_MAX_ATTEMPTS = 5
BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 30.0
# Give up waiting for a free slot after this long; the call stays pending for a resume.
MAX_WAIT_FOR_SLOT_SECONDS = 600.0
# A call another worker holds is looked at again this often.
TAKEN_POLL_SECONDS = 0.5
# Chunk runs: how often the task's thread looks for a cancel request while calls run.
CANCEL_POLL_SECONDS = 1.0
# Chunk runs: answers are stored as they come; a batch is what arrived meanwhile, gathered
# for at most this long (a killed worker loses at most this much of answered work).
FLUSH_LINGER_SECONDS = 0.02

_clients: dict[tuple, providers.JudgeClient] = {}
_clients_lock = threading.Lock()


def _client_key(judge: Judge) -> tuple:
    api_key = os.environ.get(judge.api_key_env) if judge.api_key_env else None
    return (
        judge.pk,
        judge.provider,
        judge.model_id,
        judge.endpoint,
        api_key,
        repr(sorted(judge.params.items())),
    )


def _client(judge: Judge) -> providers.JudgeClient:
    """One SDK client per judge definition and process (they pool connections)."""
    key = _client_key(judge)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = client_for(
                provider=judge.provider,
                model_id=judge.model_id,
                endpoint=judge.endpoint,
                api_key=key[4],
                params=judge.params,
            )
            _clients[key] = client
    return client


def backoff_seconds(attempt: int, retry_after: float | None, rng: random.Random) -> float:
    """Exponential backoff with full jitter; a provider's Retry-After is a floor."""
    ceiling = min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * (2 ** (attempt - 1)))
    delay = rng.uniform(0, ceiling)
    return max(delay, retry_after) if retry_after is not None else delay


def call_cost(judge: Judge, input_tokens: int | None, output_tokens: int | None) -> Decimal | None:
    if input_tokens is None and output_tokens is None:
        return None
    million = Decimal(1_000_000)
    return (
        Decimal(input_tokens or 0) * judge.price_input_per_mtok
        + Decimal(output_tokens or 0) * judge.price_output_per_mtok
    ) / million


def _finish_run_if_done(run_id: int) -> None:
    """Mark the run finished once no call is pending: one statement, a no-op otherwise."""
    JuryRun.objects.filter(
        pk=run_id, status__in=[JuryRun.Status.QUEUED, JuryRun.Status.RUNNING]
    ).filter(
        ~Exists(JudgeCall.objects.filter(run_id=OuterRef("pk"), status=JudgeCall.Status.PENDING))
    ).update(status=JuryRun.Status.FINISHED, finished_at=timezone.now())


def _mark_running(run_ids: Iterable[int]) -> None:
    JuryRun.objects.filter(pk__in=list(run_ids), status=JuryRun.Status.QUEUED).update(
        status=JuryRun.Status.RUNNING, started_at=timezone.now()
    )


def _criteria(study_id: int) -> tuple[tuple[providers.CriterionSpec, ...], dict[str, int]]:
    rows = list(RubricCriterion.objects.filter(study_id=study_id))  # the rubric's order
    specs = tuple(
        providers.CriterionSpec(
            key=c.key,
            label=c.label,
            definition=c.definition,
            scale_min=c.scale_min,
            scale_max=c.scale_max,
            anchors=c.anchors,
        )
        for c in rows
    )
    return specs, {c.key: c.pk for c in rows}


def _request(
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
class _Outcome:
    """How one call ended. status None: it did not end (cancelled, no slot in time)."""

    call_id: int
    status: str | None
    reply: providers.JudgeReply | None = None
    error: str = ""
    attempts: int = 0
    latency_ms: int | None = None
    source: _Source | None = None  # served from the cache: the billed original


@dataclass(frozen=True)
class _Source:
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
    call: JudgeCall, outcome: _Outcome, criteria_ids: dict[str, int], criteria: tuple
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
        # One statement text for any number of ids: psycopg caches its parsed form.
        where, params = f"{pk} = ANY(%s)", [list(call_ids)]
    else:
        where, params = f"{pk} IN ({', '.join(['%s'] * len(call_ids))})", list(call_ids)
    sql = f"SELECT {pk} FROM {qn(meta.db_table)} WHERE {where} AND {status} = %s"
    if connection.features.has_select_for_update:
        sql += " FOR UPDATE"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, JudgeCall.Status.PENDING.value])
        return {row[0] for row in cursor.fetchall()}


def _update_calls(calls: Sequence[JudgeCall]) -> None:
    """One UPDATE per call, sent as one executemany (psycopg pipelines it: one round trip).
    The prompt, the largest field, is never rewritten."""
    meta = JudgeCall._meta
    fields = [meta.get_field(name) for name in _UPDATED_FIELDS]
    qn = connection.ops.quote_name
    sql = (
        f"UPDATE {qn(meta.db_table)} SET "
        + ", ".join(f"{qn(f.column)} = %s" for f in fields)
        + f" WHERE {qn(meta.pk.column)} = %s"
    )
    # Only the date and the decimal need the backend's adaptation (SQLite stores them as
    # text in Django's own format); strings, integers and None go as they are.
    adapt = {"finished_at", "cost"}
    prepare = [
        (lambda v, f=f: f.get_db_prep_save(v, connection)) if f.name in adapt else None
        for f in fields
    ]
    attnames = [f.attname for f in fields]
    params = [
        [
            getattr(call, name) if conv is None else conv(getattr(call, name))
            for name, conv in zip(attnames, prepare, strict=True)
        ]
        + [call.pk]
        for call in calls
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


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
    """Insert score rows (in _SCORE_COLUMNS order): one statement text for every batch
    (psycopg caches its parsed form) sent as one executemany (pipelined on PostgreSQL)."""
    if not rows:
        return
    meta = JudgeScore._meta
    qn = connection.ops.quote_name
    columns = ", ".join(qn(meta.get_field(name).column) for name in _SCORE_COLUMNS)
    marks = ", ".join(["%s"] * len(_SCORE_COLUMNS))
    with connection.cursor() as cursor:
        cursor.executemany(f"INSERT INTO {qn(meta.db_table)} ({columns}) VALUES ({marks})", rows)


def _save_batch(
    outcomes: Sequence[_Outcome],
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
    return {call.pk: call.status for call in rows}


def _cache_sources(calls: Sequence[JudgeCall]) -> dict[tuple[int, str], _Source]:
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
        key: _Source(
            pk=row["cached_from_id"] or row["pk"],  # always point at the billed original
            raw_output=row["raw_output"],
            scores=tuple(scores.get(row["pk"], ())),
        )
        for key, row in found.items()
    }


# --- one call, synchronously ---------------------------------------------------------------------


def _copy_from_cache(call: JudgeCall) -> bool:
    """Serve an identical earlier request (same judge, parameters and prompt) without calling
    the provider again: same raw output, same scores, no cost."""
    source = _cache_sources([call]).get((call.judge_id, call.prompt_hash))
    if source is None:
        return False
    specs, ids = _criteria(call.run.study_id)
    _save_batch(
        [_Outcome(call_id=call.pk, status=JudgeCall.Status.OK, source=source)],
        calls={call.pk: call},
        criteria={call.run.study_id: (specs, ids)},
    )
    return True


def _current_status(call_id: int) -> str | None:
    return JudgeCall.objects.filter(pk=call_id).values_list("status", flat=True).first()


def execute_call(*, call_id: int, sleep=time.sleep, rng: random.Random | None = None) -> str:
    """Run one call to its end (or leave it pending when the run is cancelled). Returns the
    call's status afterwards."""
    rng = rng or random.Random()
    call = JudgeCall.objects.select_related("judge", "run").filter(pk=call_id).first()
    if call is None:
        return "missing"
    if call.status != JudgeCall.Status.PENDING:
        return call.status
    if call.run.cancel_requested:
        return call.status
    if call.run.status == JuryRun.Status.QUEUED:  # only the run's first calls write this
        _mark_running([call.run_id])
    if _copy_from_cache(call):
        _finish_run_if_done(call.run_id)
        return _current_status(call.pk) or "missing"

    judge = call.judge
    criteria, criteria_ids = _criteria(call.run.study_id)
    request = _request(call, judge, criteria)
    max_attempts = int(judge.params.get("max_attempts", DEFAULT_MAX_ATTEMPTS))
    attempts = 0
    waited = 0.0
    last_error = ""
    last_status = JudgeCall.Status.PROVIDER_ERROR
    while attempts < max_attempts:
        slot = limits.acquire(judge=judge, call=call)
        if slot.taken_elsewhere:
            # Another worker holds this call: it finishes it, or it died and its claim
            # lapses (Redis: within seconds; database: when the lease expires).
            status = _current_status(call.pk)
            if status != JudgeCall.Status.PENDING:
                return status or "missing"
            slot = limits.Acquired(ok=False, wait_seconds=TAKEN_POLL_SECONDS)
        if not slot.ok:
            if JuryRun.objects.filter(pk=call.run_id, cancel_requested=True).exists():
                limits.abandon(judge=judge, call=call)
                return JudgeCall.Status.PENDING
            if waited > MAX_WAIT_FOR_SLOT_SECONDS:
                log.warning(
                    "call %s waited %.0f s for a slot of judge %s; left pending",
                    call.pk,
                    waited,
                    judge,
                )
                limits.abandon(judge=judge, call=call)
                return JudgeCall.Status.PENDING
            pause = slot.wait_seconds * (1 + rng.random())
            sleep(pause)
            waited += pause
            continue
        attempts += 1
        started = time.monotonic()
        try:
            reply = _client(judge).complete(request)
        except providers.ProviderError as exc:
            limits.release(call=call)
            last_error = f"attempt {attempts}: {exc}"
            last_status = (
                JudgeCall.Status.TIMEOUT
                if isinstance(exc, providers.ProviderTimeout)
                else JudgeCall.Status.PROVIDER_ERROR
            )
            if not exc.retryable or attempts >= max_attempts:
                break
            sleep(backoff_seconds(attempts, exc.retry_after_seconds, rng))
            continue
        except Exception as exc:  # a bug in a client must not leave the call pending forever
            limits.release(call=call)
            last_error = f"attempt {attempts}: unexpected {type(exc).__name__}: {exc}"
            last_status = JudgeCall.Status.PROVIDER_ERROR
            break
        latency_ms = int((time.monotonic() - started) * 1000)
        status = JudgeCall.Status.REFUSED if reply.refused else JudgeCall.Status.OK
        outcome = _Outcome(
            call_id=call.pk, status=status, reply=reply, attempts=attempts, latency_ms=latency_ms
        )
        try:
            saved = _save_batch(
                [outcome],
                calls={call.pk: call},
                criteria={call.run.study_id: (criteria, criteria_ids)},
            )
        finally:
            limits.release(call=call)  # after the save: the claim covers it
        _finish_run_if_done(call.run_id)
        return saved.get(call.pk) or _current_status(call.pk) or "missing"
    outcome = _Outcome(
        call_id=call.pk, status=last_status, error=last_error, attempts=attempts, latency_ms=None
    )
    saved = _save_batch(
        [outcome], calls={call.pk: call}, criteria={call.run.study_id: (criteria, criteria_ids)}
    )
    _finish_run_if_done(call.run_id)
    return saved.get(call.pk) or _current_status(call.pk) or "missing"


# --- a chunk of calls, on the process's event loop -------------------------------------------------


async def _no_key() -> str:
    return ""


def judge_http_transport() -> httpx.AsyncBaseTransport:
    """The transport under the SDKs' async clients: aiohttp through httpx-aiohttp, the
    combination the OpenAI and Anthropic SDKs ship as DefaultAioHttpClient. httpx's default
    transport (httpcore, h11, anyio) spent about a third of a request's CPU in the jury
    benchmark, where two cores drive 48 requests in flight; aiohttp's C parser does not."""
    from httpx_aiohttp import AiohttpTransport

    return AiohttpTransport()


_cookieless_classes: dict[type, type] = {}


def _cookieless(http_client_class: type) -> type:
    """The SDK's httpx client class without a cookie jar. Judge APIs are stateless (a
    provider's cookies, e.g. a CDN's bot-management cookie, need not come back), and httpx
    reads every response's cookies through a urllib request and an email message: a fifth of
    a request's CPU here."""
    found = _cookieless_classes.get(http_client_class)
    if found is None:

        class _Cookies(httpx.Cookies):
            def extract_cookies(self, response: httpx.Response) -> None:
                return None

        no_cookies = _Cookies()

        class Cookieless(http_client_class):  # type: ignore[misc, valid-type]
            @property
            def cookies(self) -> httpx.Cookies:
                return no_cookies

            @cookies.setter
            def cookies(self, value: Any) -> None:
                pass  # nothing is kept

        found = _cookieless_classes[http_client_class] = Cookieless
    return found


class _AsyncProvider:
    """A judge's provider for the event loop: the SDK's async client, with the request body
    and reply parsing of the synchronous client (jury.providers), so both paths send and read
    exactly the same thing. Its HTTP client keeps no cookies and uses _StreamTransport.
    Other providers (Azure OpenAI, the local model) run their synchronous client in a
    thread."""

    def __init__(self, judge: Judge, api_key: str | None) -> None:
        self.sync: Any = client_for(
            provider=judge.provider,
            model_id=judge.model_id,
            endpoint=judge.endpoint,
            api_key=api_key,
            params=judge.params,
        )
        self.client: Any = None
        timeout = float(judge.params.get("timeout_seconds", 120.0))
        if judge.provider == Judge.Provider.OPENAI and not judge.params.get("api_version"):
            import openai

            self.sdk: Any = openai
            self.sdk_error: Any = openai.OpenAIError
            self.path = "/chat/completions"
            # Never api_key=None: the SDK would fall back to OPENAI_API_KEY (see openai_compat).
            self.headers: dict[str, Any] = {} if api_key else {"Authorization": openai.Omit()}
            self.client = openai.AsyncOpenAI(
                base_url=judge.endpoint or None,
                api_key=api_key or _no_key,
                max_retries=0,
                timeout=timeout,
                http_client=_cookieless(openai.DefaultAsyncHttpxClient)(
                    transport=judge_http_transport()
                ),
            )
        elif judge.provider == Judge.Provider.ANTHROPIC:
            import anthropic

            self.sdk = anthropic
            self.sdk_error = anthropic.AnthropicError
            self.path = "/v1/messages"
            self.headers = {} if api_key else {"X-Api-Key": anthropic.Omit()}
            self.client = anthropic.AsyncAnthropic(
                base_url=judge.endpoint or None,
                api_key=api_key or "",
                max_retries=0,
                timeout=timeout,
                http_client=_cookieless(anthropic.DefaultAsyncHttpxClient)(
                    transport=judge_http_transport()
                ),
            )

    async def complete(self, request: providers.JudgeRequest) -> providers.JudgeReply:
        if self.client is None:
            return await asyncio.to_thread(self.sync.complete, request)
        body = self.sync.request_body(request)
        try:
            # The SDK's own request path (base URL, auth and version headers, timeouts, its
            # error classes), without re-validating a body that request_body already built.
            response = await self.client.post(
                self.path,
                body=body,
                cast_to=httpx.Response,
                options={"timeout": request.timeout_seconds, "headers": self.headers},
            )
            text = response.text
        except self.sdk_error as exc:
            mapped = providers.map_sdk_exception(
                exc, sdk=self.sdk, label=self.sync._label, secret=self.sync._api_key
            )
            if mapped is None:
                raise
            raise mapped from None  # the SDK message embeds the response body
        if self.path == "/chat/completions":
            return self.sync._reply_from_body(text, structured="response_format" in body)
        return self.sync._reply_from_body(text)


class _LeftPending(Exception):
    """A waiting call gives up its turn (run cancelled, or no slot for too long)."""


class _Token:
    """One of a judge's Redis tokens while this process holds it."""

    __slots__ = ("uses",)

    def __init__(self) -> None:
        self.uses = 0


class _Gate:
    """This process's side of one judge's Redis tokens: local waiters, first come first
    served, and one fetcher that takes tokens for them with BLMOVE. Blocked clients of Redis
    are served in the order they blocked, so the workers of a machine (or of several) share
    a judge's slots fairly, and a token put back wakes a waiter at once: no polling.

    A token whose request has been answered goes straight to the next local waiter, up to
    HANDOFF_LIMIT requests in a row, and then back to Redis, where the other workers' blocked
    fetchers get their turn. The direct handoff spares two Redis round trips and two turns
    of busy event loops per request (the slot would sit idle meanwhile); the limit keeps one
    busy worker from keeping a judge's slots to itself."""

    HANDOFF_LIMIT = 8

    def __init__(self, engine: _Engine, judge_id: int) -> None:
        self.engine = engine
        self.judge_id = judge_id
        self.size = 0
        self.rpm = 0
        self.waiters: deque[asyncio.Future] = deque()
        self.fetching = False
        self.free_key = engine.limiter.free_key(judge_id)
        self.inuse_key = engine.limiter.inuse_key(judge_id)

    async def configure(self, *, size: int, rpm: int) -> None:
        if size != self.size:
            await self.engine.script("setup", self.judge_id, size, self.engine.limiter.owner)
            self.engine.limiter.remember(self.judge_id)
            self.size = size
        self.rpm = rpm

    async def acquire(self, waiter: asyncio.Future, *, retry: bool = False) -> _Token:
        """Wait for a token (the caller made `waiter`; failing it gives up the turn). A retry
        goes first: it has waited its turn once already, and its chunk (its task) cannot end
        before it does."""
        if retry:
            self.waiters.appendleft(waiter)
        else:
            self.waiters.append(waiter)
        if not self.fetching:
            self.fetching = True
            asyncio.get_running_loop().create_task(self._fetch())
        token: _Token = await waiter
        try:
            while self.rpm:
                wait_ms = await self.engine.script(
                    "charge", self.judge_id, self.rpm, limits.BURST_SECONDS
                )
                if not wait_ms:
                    break
                await asyncio.sleep(int(wait_ms) / 1000)
        except BaseException:
            await self.give_back()
            raise
        return token

    def _next_waiter(self) -> asyncio.Future | None:
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():  # not given up
                return waiter
        return None

    async def release(self, token: _Token) -> None:
        token.uses += 1
        if token.uses < self.HANDOFF_LIMIT:
            waiter = self._next_waiter()
            if waiter is not None:
                waiter.set_result(token)
                return
        await self.give_back()

    async def give_back(self) -> None:
        await self.engine.script("release", self.judge_id, self.engine.limiter.owner, "", "")

    async def _fetch(self) -> None:
        redis = self.engine.redis
        try:
            while self.waiters:
                if self.waiters[0].done():  # gave up its turn
                    self.waiters.popleft()
                    continue
                try:
                    taken = await redis.blmove(
                        self.free_key, self.inuse_key, 1.0, src="LEFT", dest="RIGHT"
                    )
                except Exception:
                    log.warning("jury limiter: taking a token failed; retrying", exc_info=True)
                    await asyncio.sleep(1.0)
                    continue
                if taken is None:
                    # Nothing came back for a second: free what dead workers still hold.
                    await self.engine.script(
                        "setup", self.judge_id, self.size, self.engine.limiter.owner
                    )
                    continue
                waiter = self._next_waiter()
                if waiter is not None:
                    waiter.set_result(_Token())
                else:
                    await self.give_back()
        finally:
            self.fetching = False


@dataclass
class _Job:
    call_id: int
    judge: Judge
    request: providers.JudgeRequest
    max_attempts: int


@dataclass
class _ChunkState:
    cancelled: bool = False
    waiting: set[asyncio.Future] = field(default_factory=set)

    def cancel(self) -> None:
        self.cancelled = True
        for waiter in list(self.waiting):
            if not waiter.done():
                waiter.set_exception(_LeftPending())


class _Engine:
    """One asyncio event loop per worker process, in a thread of its own, running the
    provider requests of every chunk task of the process. SDK clients and Redis connections
    live on this loop and are reused by every chunk."""

    def __init__(self, limiter: limits.RedisLimiter) -> None:
        self.limiter = limiter
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self.providers: dict[tuple, _AsyncProvider] = {}
        self.gates: dict[int, _Gate] = {}
        self.redis: Any = None
        self.scripts: dict[str, Any] = {}
        ready = threading.Event()
        self.thread = threading.Thread(
            target=self._run, args=(ready,), name="jury-engine", daemon=True
        )
        self.thread.start()
        ready.wait()

    def stop(self) -> None:
        """Close the SDK clients and Redis connections and end the loop's thread (tests; a
        worker process just exits)."""

        async def close() -> None:
            for provider in self.providers.values():
                if provider.client is not None:
                    await provider.client.close()
            await self.redis.aclose()

        if self.thread.is_alive():
            asyncio.run_coroutine_threadsafe(close(), self.loop).result(timeout=10)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)

    def _run(self, ready: threading.Event) -> None:
        import redis.asyncio

        asyncio.set_event_loop(self.loop)
        self.redis = redis.asyncio.Redis.from_url(self.limiter.url)
        self.scripts = {
            name: self.redis.register_script(limits.lua(name))
            for name in ("setup", "charge", "release")
        }
        ready.set()
        self.loop.run_forever()

    async def script(self, name: str, *args: Any) -> Any:
        return await self.scripts[name](args=[self.limiter.prefix, *args])

    def provider(self, judge: Judge) -> _AsyncProvider:
        key = _client_key(judge)
        found = self.providers.get(key)
        if found is None:
            found = self.providers[key] = _AsyncProvider(judge, key[4])
        return found

    def gate(self, judge_id: int) -> _Gate:
        found = self.gates.get(judge_id)
        if found is None:
            found = self.gates[judge_id] = _Gate(self, judge_id)
        return found

    def run_chunk(
        self, jobs: Sequence[_Job], state: _ChunkState, put: Callable[[_Outcome], None]
    ) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(self._run_chunk(jobs, state, put), self.loop)

    def cancel(self, state: _ChunkState) -> None:
        self.loop.call_soon_threadsafe(state.cancel)

    async def _run_chunk(
        self, jobs: Sequence[_Job], state: _ChunkState, put: Callable[[_Outcome], None]
    ) -> None:
        for judge in {job.judge.pk: job.judge for job in jobs}.values():
            await self.gate(judge.pk).configure(
                size=judge.max_concurrency, rpm=judge.requests_per_minute or 0
            )

        async def one(job: _Job) -> None:
            try:
                outcome = await self._run_call(job, state)
            except Exception:  # never lose a call: it stays pending for a resume
                log.exception("jury call %s failed in the engine; left pending", job.call_id)
                outcome = _Outcome(call_id=job.call_id, status=None)
            put(outcome)

        await asyncio.gather(*(one(job) for job in jobs))

    async def _run_call(self, job: _Job, state: _ChunkState) -> _Outcome:
        loop = asyncio.get_running_loop()
        gate = self.gate(job.judge.pk)
        provider = self.provider(job.judge)
        rng = random.Random()
        attempts = 0
        last_error = ""
        last_status = JudgeCall.Status.PROVIDER_ERROR
        while attempts < job.max_attempts:
            if state.cancelled:
                return _Outcome(call_id=job.call_id, status=None, attempts=attempts)
            waiter = loop.create_future()
            state.waiting.add(waiter)
            timer = loop.call_later(
                MAX_WAIT_FOR_SLOT_SECONDS,
                lambda w=waiter: w.done() or w.set_exception(_LeftPending()),
            )
            try:
                token = await gate.acquire(waiter, retry=attempts > 0)
            except _LeftPending:
                return _Outcome(call_id=job.call_id, status=None, attempts=attempts)
            finally:
                timer.cancel()
                state.waiting.discard(waiter)
            attempts += 1
            started = time.monotonic()
            try:
                reply = await provider.complete(job.request)
            except providers.ProviderError as exc:
                await gate.release(token)
                last_error = f"attempt {attempts}: {exc}"
                last_status = (
                    JudgeCall.Status.TIMEOUT
                    if isinstance(exc, providers.ProviderTimeout)
                    else JudgeCall.Status.PROVIDER_ERROR
                )
                if not exc.retryable or attempts >= job.max_attempts:
                    break
                await asyncio.sleep(backoff_seconds(attempts, exc.retry_after_seconds, rng))
                continue
            except Exception as exc:  # a bug in a client must not leave the call pending
                await gate.release(token)
                last_error = f"attempt {attempts}: unexpected {type(exc).__name__}: {exc}"
                last_status = JudgeCall.Status.PROVIDER_ERROR
                break
            latency_ms = int((time.monotonic() - started) * 1000)
            await gate.release(token)
            return _Outcome(
                call_id=job.call_id,
                status=JudgeCall.Status.REFUSED if reply.refused else JudgeCall.Status.OK,
                reply=reply,
                attempts=attempts,
                latency_ms=latency_ms,
            )
        return _Outcome(
            call_id=job.call_id, status=last_status, error=last_error, attempts=attempts
        )


_engine_instance: _Engine | None = None
_engine_lock = threading.Lock()


def _engine(limiter: limits.RedisLimiter) -> _Engine:
    global _engine_instance
    with _engine_lock:
        engine = _engine_instance
        if engine is None or engine.pid != os.getpid() or engine.limiter is not limiter:
            if engine is not None and engine.pid == os.getpid():
                engine.stop()  # its limiter was replaced (settings changed)
            engine = _engine_instance = _Engine(limiter)
        return engine


def stop_engine() -> None:
    """Stop this process's engine, if any (tests, and anyone swapping the limiter)."""
    global _engine_instance
    with _engine_lock:
        engine, _engine_instance = _engine_instance, None
    if engine is not None and engine.pid == os.getpid():
        engine.stop()


def execute_calls(*, call_ids: Sequence[int]) -> dict[str, int]:
    """Run a chunk of calls to their end; returns how many calls ended in each status
    ("pending" for those left for a resume). Safe to deliver twice: finished calls are
    skipped, calls claimed by another live worker are waited for."""
    ids = list(dict.fromkeys(int(i) for i in call_ids))
    counts: dict[str, int] = {}

    def count(status: str) -> None:
        counts[status] = counts.get(status, 0) + 1

    if limits.backend() != "redis":
        for call_id in ids:
            count(execute_call(call_id=call_id))
        return counts

    # The calls, then their few judges and runs once each (not joined on every row).
    calls = {
        c.pk: c
        for c in JudgeCall.objects.filter(pk__in=ids, status=JudgeCall.Status.PENDING).order_by(
            "pk"
        )
    }
    judges = Judge.objects.in_bulk({c.judge_id for c in calls.values()})
    run_rows = JuryRun.objects.in_bulk({c.run_id for c in calls.values()})
    for c in calls.values():
        c.judge, c.run = judges[c.judge_id], run_rows[c.run_id]
    live = [c for c in calls.values() if not c.run.cancel_requested]
    counts["pending"] = len(calls) - len(live)
    if not live:
        return counts
    runs = {c.run_id for c in live}
    _mark_running({c.run_id for c in live if c.run.status == JuryRun.Status.QUEUED})
    criteria = {sid: _criteria(sid) for sid in {c.run.study_id for c in live}}

    # The cache first: identical earlier requests cost nothing.
    sources = _cache_sources(live)
    hits = [
        _Outcome(call_id=c.pk, status=JudgeCall.Status.OK, source=sources[key])
        for c in live
        if (key := (c.judge_id, c.prompt_hash)) in sources
    ]
    for status in _save_batch(hits, calls=calls, criteria=criteria).values():
        count(status)
    hit_ids = {o.call_id for o in hits}
    # Identical requests inside the chunk: the first goes out, the others run after it (and
    # are then served from the cache).
    leaders: dict[tuple[int, str], JudgeCall] = {}
    later: list[int] = []
    for c in live:
        if c.pk in hit_ids:
            continue
        if (c.judge_id, c.prompt_hash) in leaders:
            later.append(c.pk)
        else:
            leaders[(c.judge_id, c.prompt_hash)] = c

    limiter = limits.redis_limiter()
    claimant = limiter.claimant(f"c{uuid.uuid4().hex[:12]}")
    claimed = limiter.claim(claimant=claimant, call_ids=[c.pk for c in leaders.values()])
    later.extend(c.pk for c in leaders.values() if c.pk not in claimed)  # held elsewhere
    jobs = [
        _Job(
            call_id=c.pk,
            judge=c.judge,
            request=_request(c, c.judge, criteria[c.run.study_id][0]),
            max_attempts=int(c.judge.params.get("max_attempts", DEFAULT_MAX_ATTEMPTS)),
        )
        for c in leaders.values()
        if c.pk in claimed
    ]
    try:
        if jobs:
            _run_jobs(jobs, limiter=limiter, calls=calls, criteria=criteria, count=count)
    finally:
        # The chunk's claims end with it: its calls are stored by now, or stay pending.
        limiter.unclaim(claimant=claimant, call_ids=claimed)
    for run_id in runs:
        _finish_run_if_done(run_id)
    for call_id in later:
        count(execute_call(call_id=call_id))
    return counts


def _run_jobs(
    jobs: Sequence[_Job],
    *,
    limiter: limits.RedisLimiter,
    calls: dict[int, JudgeCall],
    criteria: dict[int, tuple[tuple, dict[str, int]]],
    count: Callable[[str], None],
) -> None:
    """Hand the jobs to the engine and store their outcomes as they arrive."""
    engine = _engine(limiter)
    results: queue.SimpleQueue[_Outcome] = queue.SimpleQueue()
    state = _ChunkState()
    done = engine.run_chunk(jobs, state, results.put)
    runs = {calls[job.call_id].run_id for job in jobs}
    outstanding = len(jobs)
    next_cancel_check = time.monotonic() + CANCEL_POLL_SECONDS
    try:
        while outstanding:
            try:
                batch = [results.get(timeout=CANCEL_POLL_SECONDS)]
            except queue.Empty:
                batch = []
            failure = done.exception() if not batch and done.done() else None
            if failure is not None:  # the engine itself failed (not a call): stop here
                raise failure
            if batch:
                deadline = time.monotonic() + FLUSH_LINGER_SECONDS
                while True:
                    try:
                        batch.append(results.get(timeout=max(0.0, deadline - time.monotonic())))
                    except queue.Empty:
                        break
                saved = _save_batch(batch, calls=calls, criteria=criteria)
                for outcome in batch:
                    count(saved.get(outcome.call_id, JudgeCall.Status.PENDING))
                outstanding -= len(batch)
            if not state.cancelled and time.monotonic() >= next_cancel_check:
                next_cancel_check = time.monotonic() + CANCEL_POLL_SECONDS
                if JuryRun.objects.filter(pk__in=runs, cancel_requested=True).exists():
                    engine.cancel(state)
                    state.cancelled = True
    except BaseException:
        engine.cancel(state)  # the calls still waiting stay pending
        raise
