"""One judge call, synchronously: the per-call Celery task, `run_jury --inline`, and the
database limiter (SQLite, the embedded broker)."""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import time
from collections.abc import Callable

from django.utils import timezone

from jury import breakers, limits
from jury.execution import storage
from jury.execution.attempts import AttemptClock
from jury.execution.call_attempts import CallAttempts
from jury.execution.clients import client_key, judge_refusal
from jury.execution.retries import (
    DEFAULT_MAX_ATTEMPTS,
    max_wait_for_slot_seconds,
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
                structured_output=judge.structured_output,
            )
            _clients[key] = client
    return client


def execute_call(
    *, call_id: int, sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None
) -> str:
    """Run one call to its end (or leave it pending when the run is cancelled). Returns the
    call's status afterwards."""
    rng = rng or random.Random()
    call = JudgeCall.objects.select_related("judge", "run").filter(pk=call_id).first()
    if call is None:
        return "missing"
    if call.status != JudgeCall.Status.PENDING or call.run.cancel_requested:
        return call.status
    if call.run.status == JuryRun.Status.QUEUED:  # only the run's first calls write this
        storage.mark_running([call.run_id])
    refusal = judge_refusal(call.judge)
    if refusal is not None:
        criteria = {call.run.study_id: storage.study_criteria(call.run.study_id)}
        storage.save_outcomes(
            [storage.refused_outcome(call.pk, refusal)], calls={call.pk: call}, criteria=criteria
        )
        storage.finish_run_if_done(call.run_id)
        return _current_status(call.pk) or "missing"
    if _copy_from_cache(call):
        storage.finish_run_if_done(call.run_id)
        return _current_status(call.pk) or "missing"
    return _Attempts(call, sleep=sleep, rng=rng).run()


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


class _Attempts:
    """The attempts at one call: each waits while the judge's provider is paused (its
    breaker, jury.breakers), waits for a slot of the judge's limits, sends the request
    through the judge's SDK client and gives the slot back; a retryable failure is tried
    again after a backoff, within the judge's max_attempts and retry budget."""

    def __init__(
        self, call: JudgeCall, *, sleep: Callable[[float], None], rng: random.Random
    ) -> None:
        self.call = call
        self.judge = call.judge
        self.sleep = sleep
        self.rng = rng
        self.criteria = storage.study_criteria(call.run.study_id)
        self.request = storage.build_request(call, call.judge, self.criteria[0])
        self.board = breakers.board()
        self.endpoint = breakers.endpoint_key(call.judge)
        self.tries = CallAttempts(
            call_id=call.pk,
            max_attempts=int(call.judge.params.get("max_attempts", DEFAULT_MAX_ATTEMPTS)),
            budget_seconds=call.judge.retry_budget_seconds,
            endpoint=self.endpoint,
            holder=f"{socket.gethostname()}:{os.getpid()}#call{call.pk}",
            rng=rng,
        )
        self.waited = 0.0  # seconds spent waiting for a slot, over all attempts

    def run(self) -> str:
        """Attempt until the call ends; returns its status."""
        while True:
            ended = self.wait_for_provider()
            if ended is not None:
                return ended
            ended = self.wait_for_slot()
            if ended is not None:
                self.board.release(self.endpoint, holder=self.tries.holder)
                return self.left(ended)
            self.tries.attempts += 1
            clock = AttemptClock()
            try:
                reply = sync_client(self.judge).complete(self.request)
            except Exception as exc:
                limits.release(call=self.call)
                retry_in = self.failed(exc, clock)
                if retry_in is None:
                    break
                self.sleep(retry_in)
                if self.cancelled():
                    # Cancelled during the backoff: no further request, whether or not a
                    # slot would be free; the attempts made so far join its history.
                    self.board.release(self.endpoint, holder=self.tries.holder)
                    return self.left(JudgeCall.Status.PENDING)
                continue
            self.tries.log.append(clock.replied(reply))
            self.record_answered()
            return self.store_reply(self.tries.answered(reply))
        return self.finish(self.save(self.tries.ended()))

    def wait_for_provider(self) -> str | None:
        """Wait while the judge's provider is paused (None: send now), or the status the call
        ends its wait in: pending (run cancelled), or a provider error once the outage has
        lasted longer than the judge's retry budget."""
        turn, state = self.board.wait_turn(
            self.endpoint,
            holder=self.tries.holder,
            lease_seconds=self.request.timeout_seconds + breakers.PROBE_MARGIN_SECONDS,
            budget_seconds=self.judge.retry_budget_seconds,
            began_at=self.tries.began_at,
            sleep=self.sleep,
            cancelled=self.cancelled,
        )
        if turn is None:
            return self.left(JudgeCall.Status.PENDING)
        if turn is breakers.Turn.GIVE_UP:
            reason = breakers.unreachable_reason(
                state, now=time.time(), tz=timezone.get_current_timezone()
            )
            self.tries.gave_up(reason, state)
            return self.finish(self.save(self.tries.ended()))
        return None

    def cancelled(self) -> bool:
        return JuryRun.objects.filter(pk=self.call.run_id, cancel_requested=True).exists()

    def wait_for_slot(self) -> str | None:
        """Take a slot (None), or the status the call ends its wait in: another worker
        finished it, or it stays pending (run cancelled, no slot for too long)."""
        while True:
            slot = limits.acquire(judge=self.judge, call=self.call)
            if slot.ok:
                return None
            wait = slot.wait_seconds
            if slot.taken_elsewhere:
                # Another worker holds this call: it finishes it, or it died and its claim
                # lapses (Redis: within seconds; database: when the lease expires).
                status = _current_status(self.call.pk)
                if status != JudgeCall.Status.PENDING:
                    return status or "missing"
                wait = TAKEN_POLL_SECONDS
            if JuryRun.objects.filter(pk=self.call.run_id, cancel_requested=True).exists():
                limits.abandon(judge=self.judge, call=self.call)
                return JudgeCall.Status.PENDING
            if self.waited > max_wait_for_slot_seconds():
                log.warning(
                    "call %s waited %.0f s for a slot of judge %s; left pending for the sweep",
                    self.call.pk,
                    self.waited,
                    self.judge,
                )
                limits.abandon(judge=self.judge, call=self.call)
                return JudgeCall.Status.PENDING
            pause = wait * (1 + self.rng.random())
            self.sleep(pause)
            self.waited += pause

    def left(self, status: str) -> str:
        """The call's wait ended without a slot (`status`: left pending, or ended by another
        worker): the attempts made before still join its history."""
        if self.tries.log:
            self.save(self.tries.left_pending())
        return status

    def record_answered(self) -> None:
        """Tell the breaker the provider answered. The reply is paid for: a breaker store that
        cannot be reached right now (its Redis restarting) must not throw it away, or the
        sweep would ask, and pay, again; a breaker that missed one signal sees the next."""
        try:
            self.board.record(
                self.endpoint, holder=self.tries.holder, signal=breakers.Signal.UP, error=""
            )
        except Exception:
            log.warning(
                "jury breaker: recording an answer for %s failed", self.endpoint, exc_info=True
            )

    def failed(self, exc: Exception, clock: AttemptClock) -> float | None:
        """Note a failed attempt; returns the backoff before the next one, or None when no
        other attempt is to be made."""
        signal = breakers.signal_of(exc)
        after = self.board.record(
            self.endpoint, holder=self.tries.holder, signal=signal, error=str(exc)
        )
        return self.tries.failed(exc, clock, after)

    def store_reply(self, outcome: storage.Outcome) -> str:
        """Store what the judge said, then give the slot back (the claim covers the save)."""
        try:
            saved = self.save(outcome)
        finally:
            limits.release(call=self.call)
        return self.finish(saved)

    def save(self, outcome: storage.Outcome) -> dict[int, str]:
        return storage.save_outcomes(
            [outcome],
            calls={self.call.pk: self.call},
            criteria={self.call.run.study_id: self.criteria},
        )

    def finish(self, saved: dict[int, str]) -> str:
        """Mark the run finished if this was its last call; the call's status."""
        storage.finish_run_if_done(self.call.run_id)
        return saved.get(self.call.pk) or _current_status(self.call.pk) or "missing"
