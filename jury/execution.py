"""Running one judge call to its end: cache, limits, retries with backoff, verdict, scores.

Every call ends in exactly one status (ok, invalid verdict, provider error, timeout,
refused) with its raw output kept. Executing a call twice is harmless: a call that is no
longer pending, or that another worker holds, is left alone, and identical requests (same
prompt hash) are served from an earlier ok call at no cost.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

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

_clients: dict[tuple, providers.JudgeClient] = {}
_clients_lock = threading.Lock()


def _client(judge: Judge) -> providers.JudgeClient:
    """One SDK client per judge definition and process (they pool connections)."""
    api_key = os.environ.get(judge.api_key_env) if judge.api_key_env else None
    key = (
        judge.pk,
        judge.provider,
        judge.model_id,
        judge.endpoint,
        api_key,
        repr(sorted(judge.params.items())),
    )
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = client_for(
                provider=judge.provider,
                model_id=judge.model_id,
                endpoint=judge.endpoint,
                api_key=api_key,
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
    run = JuryRun.objects.filter(pk=run_id).first()
    if run is None or run.status not in (JuryRun.Status.QUEUED, JuryRun.Status.RUNNING):
        return
    if run.calls.filter(status=JudgeCall.Status.PENDING).exists():
        return
    JuryRun.objects.filter(
        pk=run_id, status__in=[JuryRun.Status.QUEUED, JuryRun.Status.RUNNING]
    ).update(status=JuryRun.Status.FINISHED, finished_at=timezone.now())


def _copy_from_cache(call: JudgeCall) -> bool:
    """Serve an identical earlier request (same judge, parameters and prompt) without calling
    the provider again: same raw output, same scores, no cost."""
    source = (
        JudgeCall.objects.filter(
            prompt_hash=call.prompt_hash, judge_id=call.judge_id, status=JudgeCall.Status.OK
        )
        .exclude(pk=call.pk)
        .order_by("pk")
        .first()
    )
    if source is None:
        return False
    with transaction.atomic():
        fresh = JudgeCall.objects.select_for_update().get(pk=call.pk)
        if fresh.status != JudgeCall.Status.PENDING:
            return True
        fresh.status = JudgeCall.Status.OK
        fresh.raw_output = source.raw_output
        fresh.cached_from_id = (
            source.cached_from_id or source.pk
        )  # always point at the billed original
        fresh.cost = Decimal(0)
        fresh.latency_ms = 0
        fresh.finished_at = timezone.now()
        fresh.save()
        JudgeScore.objects.bulk_create(
            JudgeScore(
                item_id=fresh.item_id,
                judge_id=fresh.judge_id,
                criterion_id=s.criterion_id,
                call=fresh,
                value=s.value,
                is_valid=s.is_valid,
                explanation=s.explanation,
            )
            for s in source.scores.all()
        )
    return True


def _save_outcome(
    call: JudgeCall,
    *,
    status: str,
    criteria_ids: dict[str, int],
    reply: providers.JudgeReply | None,
    error: str,
    attempts: int,
    latency_ms: int | None,
    criteria: tuple[providers.CriterionSpec, ...],
) -> str:
    """Store a call's outcome and scores; returns the call's final status."""
    with transaction.atomic():
        fresh = JudgeCall.objects.select_for_update().select_related("judge").get(pk=call.pk)
        if fresh.status != JudgeCall.Status.PENDING:
            return fresh.status  # another worker finished it first; keep theirs
        fresh.attempts = attempts
        fresh.latency_ms = latency_ms
        fresh.error = error[:5000]
        fresh.finished_at = timezone.now()
        scores: list[JudgeScore] = []
        if reply is not None:
            fresh.raw_output = reply.text
            fresh.input_tokens = reply.input_tokens
            fresh.output_tokens = reply.output_tokens
            fresh.cost = call_cost(fresh.judge, reply.input_tokens, reply.output_tokens)
            if status == JudgeCall.Status.OK:
                verdict = parse_verdict(reply.text, criteria)
                if not verdict.ok:
                    status = JudgeCall.Status.INVALID
                    fresh.error = verdict.reason
                for cv in verdict.criteria:
                    if cv.key in criteria_ids:
                        scores.append(
                            JudgeScore(
                                item_id=fresh.item_id,
                                judge_id=fresh.judge_id,
                                criterion_id=criteria_ids[cv.key],
                                call=fresh,
                                value=cv.value,
                                is_valid=cv.valid and verdict.ok,
                                explanation=cv.explanation if cv.valid else cv.reason,
                            )
                        )
        fresh.status = status
        # Not the prompt: it never changes and is the largest field of the row.
        fresh.save(
            update_fields=[
                "status",
                "attempts",
                "latency_ms",
                "error",
                "finished_at",
                "raw_output",
                "input_tokens",
                "output_tokens",
                "cost",
            ]
        )
        JudgeScore.objects.bulk_create(scores)
    return status


def execute_call(*, call_id: int, sleep=time.sleep, rng: random.Random | None = None) -> str:
    """Run one call to its end (or leave it pending when the run is cancelled). Returns the
    call's status afterwards."""
    rng = rng or random.Random()
    call = (
        JudgeCall.objects.select_related("judge", "run", "item__study").filter(pk=call_id).first()
    )
    if call is None:
        return "missing"
    if call.status != JudgeCall.Status.PENDING:
        return call.status
    if call.run.cancel_requested:
        return call.status
    if call.run.status == JuryRun.Status.QUEUED:  # only the run's first calls write this
        JuryRun.objects.filter(pk=call.run_id, status=JuryRun.Status.QUEUED).update(
            status=JuryRun.Status.RUNNING, started_at=timezone.now()
        )
    if _copy_from_cache(call):
        _finish_run_if_done(call.run_id)
        return JudgeCall.objects.get(pk=call.pk).status

    judge = call.judge
    study_criteria = list(call.item.study.criteria.all())
    criteria = tuple(
        providers.CriterionSpec(
            key=c.key,
            label=c.label,
            definition=c.definition,
            scale_min=c.scale_min,
            scale_max=c.scale_max,
            anchors=c.anchors,
        )
        for c in study_criteria
    )
    criteria_ids = {c.key: c.pk for c in study_criteria}
    request = providers.JudgeRequest(
        system=call.system_text,
        prompt=call.prompt_text,
        criteria=criteria,
        temperature=float(judge.params.get("temperature", 0.0)),
        max_tokens=int(judge.params.get("max_tokens", 1024)),
        timeout_seconds=judge.timeout_seconds,
    )
    max_attempts = int(judge.params.get("max_attempts", DEFAULT_MAX_ATTEMPTS))
    attempts = 0
    waited = 0.0
    last_error = ""
    last_status = JudgeCall.Status.PROVIDER_ERROR
    while attempts < max_attempts:
        slot = limits.acquire(judge=judge, call=call)
        if slot.taken_elsewhere:
            return JudgeCall.objects.get(pk=call.pk).status
        if not slot.ok:
            if JuryRun.objects.filter(pk=call.run_id, cancel_requested=True).exists():
                return JudgeCall.Status.PENDING
            if waited > MAX_WAIT_FOR_SLOT_SECONDS:
                log.warning(
                    "call %s waited %.0f s for a slot of judge %s; left pending",
                    call.pk,
                    waited,
                    judge,
                )
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
        final = _save_outcome(
            call,
            status=status,
            criteria_ids=criteria_ids,
            reply=reply,
            error="",
            attempts=attempts,
            latency_ms=latency_ms,
            criteria=criteria,
        )
        limits.release(call=call)
        _finish_run_if_done(call.run_id)
        return final
    final = _save_outcome(
        call,
        status=last_status,
        criteria_ids=criteria_ids,
        reply=None,
        error=last_error,
        attempts=attempts,
        latency_ms=None,
        criteria=criteria,
    )
    _finish_run_if_done(call.run_id)
    return final
