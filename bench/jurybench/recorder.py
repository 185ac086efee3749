"""What an instrumented worker measures: wall and CPU time per phase of a call, SQL per kind,
limiter outcomes, CPU per kind of thread and cProfile profiles; written out at shutdown."""

from __future__ import annotations

import cProfile
import json
import os
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _support import stat_cpu_seconds


class Recorder:
    """Figures shared by the worker's threads (a lock guards them)."""

    def __init__(self, use_cprofile: bool) -> None:
        self.use_cprofile = use_cprofile
        self.lock = threading.Lock()
        self.phases: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])  # n, wall, cpu
        self.sql: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])  # count, wall
        self.acquired: Counter[str] = Counter()
        self.profiles: list[cProfile.Profile] = []  # task threads
        self.loop_profiles: list[cProfile.Profile] = []  # the event loop's thread
        self.main_profiles: list[cProfile.Profile] = []  # Celery's main thread
        self.task_threads: dict[int, float] = {}  # native thread id -> its CPU seconds so far
        self.local = threading.local()

    def add(self, name: str, wall: float, cpu: float) -> None:
        with self.lock:
            row = self.phases[name]
            row[0] += 1
            row[1] += wall
            row[2] += cpu

    def add_sql(self, label: str, wall: float) -> None:
        with self.lock:
            row = self.sql[label]
            row[0] += 1
            row[1] += wall

    def count_acquire(self, outcome: str) -> None:
        with self.lock:
            self.acquired[outcome] += 1

    def new_profile(self, found: list[cProfile.Profile]) -> cProfile.Profile:
        """A profile on this thread's CPU clock (waits for the GIL, locks and sockets are in
        the phase timers), kept in `found` for the dump."""
        profile = cProfile.Profile(time.thread_time)
        with self.lock:
            found.append(profile)
        return profile

    def timed(self, name: str, fn: Callable) -> Callable:
        """`fn` with its wall and thread CPU time added to phase `name`."""

        def wrapper(*a: Any, **kw: Any) -> Any:
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                return fn(*a, **kw)
            finally:
                self.add(name, time.perf_counter() - t0, time.thread_time() - c0)

        return wrapper

    def task_body(self, name: str, fn: Callable) -> Callable:
        """A Celery task's body, timed, profiled with --cprofile, its thread's CPU kept."""

        def wrapper(**kw: Any) -> Any:
            pr = getattr(self.local, "profile", None)
            if self.use_cprofile and pr is None:
                pr = self.local.profile = self.new_profile(self.profiles)
            t0, c0 = time.perf_counter(), time.thread_time()
            if pr is not None:
                pr.enable()
            try:
                return fn(**kw)
            finally:
                if pr is not None:
                    pr.disable()
                self.add(name, time.perf_counter() - t0, time.thread_time() - c0)
                with self.lock:  # the pool's threads are gone by the time the figures are dumped
                    self.task_threads[threading.get_native_id()] = time.thread_time()

        return wrapper

    def thread_cpu(self) -> dict[str, float]:
        """CPU seconds per kind of thread of this process, from /proc (the event loop, the
        Celery pool's threads, the limiter's heartbeat, the rest)."""
        found: Counter[str] = Counter()
        for thread in threading.enumerate():
            if thread.native_id in self.task_threads:
                continue
            try:
                stat = Path(f"/proc/self/task/{thread.native_id}/stat").read_text()
            except OSError:
                continue
            found[thread_kind(thread.name)] += stat_cpu_seconds(stat)
        found["task threads (Celery pool)"] = sum(self.task_threads.values())
        return dict(found)

    def dump(self, out: Path) -> None:
        """The figures as JSON to `out`, the profiles beside it (.prof, .loop.prof, .main.prof)."""
        import pstats

        with self.lock:
            data = {
                "pid": os.getpid(),
                "phases": {k: list(v) for k, v in self.phases.items()},
                "sql": {k: list(v) for k, v in self.sql.items()},
                "acquire": dict(self.acquired),
                "threads": self.thread_cpu(),
            }
        out.write_text(json.dumps(data))
        for found, suffix in (
            (self.profiles, ".prof"),
            (self.loop_profiles, ".loop.prof"),
            (self.main_profiles, ".main.prof"),
        ):
            if found:
                for pr in found:
                    pr.disable()  # the loop's thread is still running at shutdown
                stats = pstats.Stats(found[0])
                for pr in found[1:]:
                    stats.add(pr)
                stats.dump_stats(str(out.with_suffix(suffix)))


def thread_kind(name: str) -> str:
    if name == "jury-engine":
        return "event loop (jury-engine)"
    if name.startswith("jury-limiter"):
        return "limiter heartbeat"
    if name == "MainThread":
        return "Celery main thread (consumer)"
    return "other threads"
