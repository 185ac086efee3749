"""A chunk of judge calls (the Celery task `start_run` sends when the limits live in Redis):
loaded in one query, cache hits served in one, the provider requests run on the process's
engine, the answers stored in batches as they arrive."""

from __future__ import annotations

import queue
import time
import uuid
from collections.abc import Callable, Sequence

from jury import limits
from jury.execution import storage
from jury.execution.engine import ChunkState, Job, get_engine
from jury.execution.retries import DEFAULT_MAX_ATTEMPTS
from jury.execution.single import execute_call
from jury.models import Judge, JudgeCall, JuryRun

# How often the task's thread looks for a cancel request while calls run.
CANCEL_POLL_SECONDS = 1.0
# Answers are stored as they come; a batch is what arrived meanwhile, gathered for at most
# this long (a killed worker loses at most this much of answered work). At 0.02 s a batch
# held about 4 answers in the jury benchmark; at 0.1 s about 8, which took the saves' CPU
# from 0.73 to 0.53 ms a call.
FLUSH_LINGER_SECONDS = 0.1


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
    storage.mark_running({c.run_id for c in live if c.run.status == JuryRun.Status.QUEUED})
    criteria = {sid: storage.study_criteria(sid) for sid in {c.run.study_id for c in live}}

    # The cache first: identical earlier requests cost nothing.
    sources = storage.cache_sources(live)
    hits = [
        storage.Outcome(call_id=c.pk, status=JudgeCall.Status.OK, source=sources[key])
        for c in live
        if (key := (c.judge_id, c.prompt_hash)) in sources
    ]
    for status in storage.save_outcomes(hits, calls=calls, criteria=criteria).values():
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
        Job(
            call_id=c.pk,
            judge=c.judge,
            request=storage.build_request(c, c.judge, criteria[c.run.study_id][0]),
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
        storage.finish_run_if_done(run_id)
    for call_id in later:
        count(execute_call(call_id=call_id))
    return counts


def _run_jobs(
    jobs: Sequence[Job],
    *,
    limiter: limits.RedisLimiter,
    calls: dict[int, JudgeCall],
    criteria: dict[int, tuple[tuple, dict[str, int]]],
    count: Callable[[str], None],
) -> None:
    """Hand the jobs to the engine and store their outcomes as they arrive."""
    engine = get_engine(limiter)
    results: queue.SimpleQueue[storage.Outcome] = queue.SimpleQueue()
    state = ChunkState()
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
                saved = storage.save_outcomes(batch, calls=calls, criteria=criteria)
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
