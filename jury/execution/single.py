"""One judge call, synchronously: the per-call Celery task, `run_jury --inline`, and the
database limiter (SQLite, the embedded broker)."""

from __future__ import annotations

import logging
import random
import threading
import time

from jury import limits
from jury.execution import storage
from jury.execution.clients import client_key
from jury.execution.retries import (
    DEFAULT_MAX_ATTEMPTS,
    MAX_WAIT_FOR_SLOT_SECONDS,
    backoff_seconds,
)
from jury.models import Judge, JudgeCall, JuryRun
from jury.providers import base as providers
from jury.providers import client_for

log = logging.getLogger(__name__)

# A call another worker holds is looked at again this often.
TAKEN_POLL_SECONDS = 0.5

_clients: dict[tuple, providers.JudgeClient] = {}
_clients_lock = threading.Lock()


def sync_client(judge: Judge) -> providers.JudgeClient:
    """One SDK client per judge definition and process (they pool connections)."""
    key = client_key(judge)
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


def _copy_from_cache(call: JudgeCall) -> bool:
    """Serve an identical earlier request (same judge, parameters and prompt) without calling
    the provider again: same raw output, same scores, no cost."""
    source = storage.cache_sources([call]).get((call.judge_id, call.prompt_hash))
    if source is None:
        return False
    specs, ids = storage.study_criteria(call.run.study_id)
    storage.save_outcomes(
        [storage.Outcome(call_id=call.pk, status=JudgeCall.Status.OK, source=source)],
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
        storage.mark_running([call.run_id])
    if _copy_from_cache(call):
        storage.finish_run_if_done(call.run_id)
        return _current_status(call.pk) or "missing"

    judge = call.judge
    criteria, criteria_ids = storage.study_criteria(call.run.study_id)
    request = storage.build_request(call, judge, criteria)
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
            reply = sync_client(judge).complete(request)
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
        outcome = storage.Outcome(
            call_id=call.pk, status=status, reply=reply, attempts=attempts, latency_ms=latency_ms
        )
        try:
            saved = storage.save_outcomes(
                [outcome],
                calls={call.pk: call},
                criteria={call.run.study_id: (criteria, criteria_ids)},
            )
        finally:
            limits.release(call=call)  # after the save: the claim covers it
        storage.finish_run_if_done(call.run_id)
        return saved.get(call.pk) or _current_status(call.pk) or "missing"
    outcome = storage.Outcome(
        call_id=call.pk, status=last_status, error=last_error, attempts=attempts, latency_ms=None
    )
    saved = storage.save_outcomes(
        [outcome], calls={call.pk: call}, criteria={call.run.study_id: (criteria, criteria_ids)}
    )
    storage.finish_run_if_done(call.run_id)
    return saved.get(call.pk) or _current_status(call.pk) or "missing"
