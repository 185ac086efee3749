"""A chunk of judge calls (the Celery task `start_run` sends when the limits live in Redis):
loaded in one query, cache hits served in one, the provider requests run on the process's
engine, the answers stored in batches as they arrive."""

from __future__ import annotations

import queue
import time
import uuid
from collections.abc import Sequence

from jury import limits
from jury.execution import storage
from jury.execution.clients import judge_refusal
from jury.execution.engine import ChunkState, Engine, Job, get_engine
from jury.execution.retries import DEFAULT_MAX_ATTEMPTS
from jury.execution.single import execute_call
from jury.limits.endpoints import endpoint_slots
from jury.models import Judge, JudgeCall, JuryRun

# How often the task's thread looks for a cancel request while calls run.
CANCEL_POLL_SECONDS = 1.0
# Answers are stored as they come; a batch is what arrived meanwhile, gathered for at most
# this long (a killed worker loses at most this much of answered work; a longer linger makes
# larger batches, which cost less to save per call).
FLUSH_LINGER_SECONDS = 0.1

Criteria = dict[int, tuple[tuple, dict[str, int]]]  # study -> its criteria specs and ids


def execute_calls(*, call_ids: Sequence[int]) -> dict[str, int]:
    """Run a chunk of calls to their end; returns how many calls ended in each status
    ("pending" for those left for a resume). Safe to deliver twice: finished calls are
    skipped, calls claimed by another live worker are waited for."""
    ids = list(dict.fromkeys(int(i) for i in call_ids))
    counts: dict[str, int] = {}
    if limits.backend() != "redis":
        for call_id in ids:
            _count(counts, execute_call(call_id=call_id))
        return counts

    calls = _pending_calls(ids)
    live = [c for c in calls.values() if not c.run.cancel_requested]
    counts["pending"] = len(calls) - len(live)
    if not live:
        return counts
    storage.mark_running({c.run_id for c in live if c.run.status == JuryRun.Status.QUEUED})
    criteria = {sid: storage.study_criteria(sid) for sid in {c.run.study_id for c in live}}
    run_ids = {c.run_id for c in live}
    refused = _refuse_forbidden(live, calls=calls, criteria=criteria, counts=counts)
    live = [c for c in live if c.pk not in refused]
    hits = _serve_from_cache(live, calls=calls, criteria=criteria, counts=counts)
    # Identical requests inside the chunk: the first goes out, the others run after it (and
    # are then served from the cache).
    leaders: dict[tuple[int, str], JudgeCall] = {}
    later: list[int] = []
    for c in live:
        if c.pk in hits:
            continue
        if (c.judge_id, c.prompt_hash) in leaders:
            later.append(c.pk)
        else:
            leaders[(c.judge_id, c.prompt_hash)] = c
    later += _send(list(leaders.values()), calls=calls, criteria=criteria, counts=counts)
    for run_id in run_ids:
        storage.finish_run_if_done(run_id)
    for call_id in later:
        _count(counts, execute_call(call_id=call_id))
    return counts


def _count(counts: dict[str, int], status: str) -> None:
    counts[status] = counts.get(status, 0) + 1


def _pending_calls(ids: Sequence[int]) -> dict[int, JudgeCall]:
    """The calls still pending, with their few judges and runs read once each (not joined
    on every row)."""
    calls = {
        c.pk: c
        for c in JudgeCall.objects.filter(pk__in=ids, status=JudgeCall.Status.PENDING).order_by(
            "pk"
        )
    }
    judges = Judge.objects.in_bulk({c.judge_id for c in calls.values()})
    runs = JuryRun.objects.in_bulk({c.run_id for c in calls.values()})
    for c in calls.values():
        c.judge, c.run = judges[c.judge_id], runs[c.run_id]
    return calls


def _refuse_forbidden(
    live: Sequence[JudgeCall],
    *,
    calls: dict[int, JudgeCall],
    criteria: Criteria,
    counts: dict[str, int],
) -> set[int]:
    """Fail, without sending anything, the calls of judges the operator's rules refuse; their
    ids."""
    refusals = {c.judge_id: judge_refusal(c.judge) for c in live}
    outcomes = [
        storage.refused_outcome(c.pk, reason)
        for c in live
        if (reason := refusals[c.judge_id]) is not None
    ]
    for status in storage.save_outcomes(outcomes, calls=calls, criteria=criteria).values():
        _count(counts, status)
    return {o.call_id for o in outcomes}


def _serve_from_cache(
    live: Sequence[JudgeCall],
    *,
    calls: dict[int, JudgeCall],
    criteria: Criteria,
    counts: dict[str, int],
) -> set[int]:
    """Store the calls an identical earlier request answered (at no cost); their ids."""
    sources = storage.cache_sources(live)
    hits = [
        storage.Outcome(call_id=c.pk, status=JudgeCall.Status.OK, source=sources[key])
        for c in live
        if (key := (c.judge_id, c.prompt_hash)) in sources
    ]
    for status in storage.save_outcomes(hits, calls=calls, criteria=criteria).values():
        _count(counts, status)
    return {o.call_id for o in hits}


def _send(
    leaders: Sequence[JudgeCall],
    *,
    calls: dict[int, JudgeCall],
    criteria: Criteria,
    counts: dict[str, int],
) -> list[int]:
    """Claim the calls and run those claimed on the engine; returns the ids another worker
    holds (they are run one by one afterwards, which waits for that worker)."""
    limiter = limits.redis_limiter()
    claimant = limiter.claimant(f"c{uuid.uuid4().hex[:12]}")
    claimed = limiter.claim(claimant=claimant, call_ids=[c.pk for c in leaders])
    judges = {c.judge_id: c.judge for c in leaders}
    servers = {pk: endpoint_slots(judge) for pk, judge in judges.items()}
    jobs = [
        Job(
            call_id=c.pk,
            judge=c.judge,
            request=storage.build_request(c, c.judge, criteria[c.run.study_id][0]),
            max_attempts=int(c.judge.params.get("max_attempts", DEFAULT_MAX_ATTEMPTS)),
            server=servers[c.judge_id],
        )
        for c in leaders
        if c.pk in claimed
    ]
    try:
        if jobs:
            _run_jobs(
                jobs, engine=get_engine(limiter), calls=calls, criteria=criteria, counts=counts
            )
    finally:
        # The chunk's claims end with it: its calls are stored by now, or stay pending.
        limiter.unclaim(claimant=claimant, call_ids=claimed)
    return [c.pk for c in leaders if c.pk not in claimed]


def _run_jobs(
    jobs: Sequence[Job],
    *,
    engine: Engine,
    calls: dict[int, JudgeCall],
    criteria: Criteria,
    counts: dict[str, int],
) -> None:
    """Hand the jobs to the engine and store their outcomes as they arrive; ask the engine
    to stop when a run is cancelled (the calls still waiting stay pending)."""
    results: queue.SimpleQueue[storage.Outcome] = queue.SimpleQueue()
    state = ChunkState()
    done = engine.run_chunk(jobs, state, results.put)
    runs = {calls[job.call_id].run_id for job in jobs}
    outstanding = len(jobs)
    next_cancel_check = time.monotonic() + CANCEL_POLL_SECONDS
    try:
        while outstanding:
            batch = _next_batch(results)
            failure = done.exception() if not batch and done.done() else None
            if failure is not None:  # the engine itself failed (not a call): stop here
                raise failure
            if batch:
                saved = storage.save_outcomes(batch, calls=calls, criteria=criteria)
                for outcome in batch:
                    _count(counts, saved.get(outcome.call_id, JudgeCall.Status.PENDING))
                outstanding -= len(batch)
            if not state.cancelled and time.monotonic() >= next_cancel_check:
                next_cancel_check = time.monotonic() + CANCEL_POLL_SECONDS
                if JuryRun.objects.filter(pk__in=runs, cancel_requested=True).exists():
                    engine.cancel(state)
                    state.cancelled = True
    except BaseException:
        engine.cancel(state)  # the calls still waiting stay pending
        raise


def _next_batch(results: queue.SimpleQueue[storage.Outcome]) -> list[storage.Outcome]:
    """The outcomes that arrive within CANCEL_POLL_SECONDS, and those that follow the first
    within FLUSH_LINGER_SECONDS; empty when none came."""
    try:
        batch = [results.get(timeout=CANCEL_POLL_SECONDS)]
    except queue.Empty:
        return []
    deadline = time.monotonic() + FLUSH_LINGER_SECONDS
    while True:
        try:
            batch.append(results.get(timeout=max(0.0, deadline - time.monotonic())))
        except queue.Empty:
            return batch
