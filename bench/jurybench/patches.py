"""Every place where the jury bench reaches into the jury app's internals, one function each,
so that a change of those names is adapted here only:

- jury.limits.acquire / jury.limits.release        (time_limiter)
- jury.execution.storage.cache_sources, .save_outcomes, .finish_run_if_done  (time_storage)
- jury.execution.single.sync_client                 (time_sync_client)
- jury.execution.clients.AsyncProvider.complete     (time_event_loop_requests)
- jury.execution.engine.Engine.run_loop                 (profile_event_loop, with --cprofile)
- jury.tasks.execute_call / jury.tasks.execute_calls (time_tasks)
- jury.services.dispatch_calls                            (around_dispatch, in the bench process)
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from jurybench.recorder import Recorder


def install_worker_patches(rec: Recorder) -> None:
    """All the timers of an instrumented worker (and the event loop's profile with --cprofile)."""
    time_limiter(rec)
    time_storage(rec)
    time_sync_client(rec)
    time_event_loop_requests(rec)
    if rec.use_cprofile:
        profile_event_loop(rec)
    time_tasks(rec)


def time_limiter(rec: Recorder) -> None:
    """The per-call path's limiter: acquire by outcome (ok, wait, taken elsewhere), release."""
    from jury import limits

    original_acquire = limits.acquire

    def acquire(**kw: Any) -> Any:
        t0, c0 = time.perf_counter(), time.thread_time()
        slot = original_acquire(**kw)
        name = "taken" if slot.taken_elsewhere else "ok" if slot.ok else "wait"
        rec.add(f"limits.acquire ({name})", time.perf_counter() - t0, time.thread_time() - c0)
        rec.count_acquire(name)
        return slot

    limits.acquire = acquire
    limits.release = rec.timed("limits.release", limits.release)


def time_storage(rec: Recorder) -> None:
    """The database work of a chunk: its cache lookup, each batched save, the finish check."""
    from jury.execution import storage

    storage.cache_sources = rec.timed("cache lookup (storage.cache_sources)", storage.cache_sources)
    storage.save_outcomes = rec.timed(
        "storage.save_outcomes (one transaction)", storage.save_outcomes
    )
    storage.finish_run_if_done = rec.timed("storage.finish_run_if_done", storage.finish_run_if_done)


class TimedClient:
    """A judge's synchronous client whose complete() is timed, by outcome."""

    def __init__(self, client: Any, rec: Recorder) -> None:
        self.client, self.rec = client, rec

    def complete(self, request: Any) -> Any:
        t0, c0 = time.perf_counter(), time.thread_time()
        outcome = "ok"
        try:
            return self.client.complete(request)
        except Exception:
            outcome = "error"
            raise
        finally:
            self.rec.add(
                f"provider call ({outcome})", time.perf_counter() - t0, time.thread_time() - c0
            )


def time_sync_client(rec: Recorder) -> None:
    """The per-call path's provider requests."""
    from jury.execution import single

    original_client = single.sync_client
    wrapped: dict[int, TimedClient] = {}

    def client(judge: Any) -> TimedClient:
        inner = original_client(judge)
        with rec.lock:
            return wrapped.setdefault(id(inner), TimedClient(inner, rec))

    single.sync_client = client


def time_event_loop_requests(rec: Recorder) -> None:
    """The event loop's requests: wall time only (the loop's CPU is shared by all of them)."""
    from jury.execution import clients

    original_complete = clients.AsyncProvider.complete

    async def complete(self: Any, request: Any) -> Any:
        t0 = time.perf_counter()
        outcome = "ok"
        try:
            return await original_complete(self, request)
        except Exception:
            outcome = "error"
            raise
        finally:
            rec.add(
                f"provider call on the event loop ({outcome}; wall)", time.perf_counter() - t0, 0.0
            )

    clients.AsyncProvider.complete = complete


def profile_event_loop(rec: Recorder) -> None:
    """cProfile of the event loop's thread: the provider requests' CPU is spent there."""
    from jury.execution import engine

    original_run = engine.Engine.run_loop

    def run(self: Any, ready: Any) -> None:
        pr = rec.new_profile(rec.loop_profiles)
        pr.enable()
        try:
            original_run(self, ready)
        finally:
            pr.disable()

    engine.Engine.run_loop = run


def time_tasks(rec: Recorder) -> None:
    """The whole body of each task: one call, or one chunk of calls."""
    from jury import tasks

    tasks.execute_call = rec.task_body("execute_call (whole task body)", tasks.execute_call)
    tasks.execute_calls = rec.task_body(
        "execute_calls (whole chunk task body)", tasks.execute_calls
    )


@contextlib.contextmanager
def around_dispatch(before: Callable[[], None], after: Callable[[], None]) -> Iterator[None]:
    """While inside, start_run's sending of the tasks runs between `before` and `after`."""
    from jury import services

    original = services.dispatch_calls

    def dispatch(ids: list[int]) -> None:
        before()
        original(ids)
        after()

    services.dispatch_calls = dispatch
    try:
        yield
    finally:
        services.dispatch_calls = original
