"""One phase of the jury bench: start a run in this process, wait for the workers to finish
it, and collect what was measured meanwhile (CPU, PostgreSQL, the fake provider's counters)."""

from __future__ import annotations

import time
from typing import Any

from _support import CpuMeter, PgSampler, pg_stats

from jurybench.fake_server import FakeServer
from jurybench.patches import around_dispatch
from jurybench.workers import Workers


def run_phase(
    *,
    name: str,
    study: Any,
    judges: list,
    user: Any,
    server: FakeServer,
    workers: Workers,
    cpu: CpuMeter | None,
    url: str,
    timeout: float,
) -> dict[str, Any]:
    """Start a run on `study` with `judges`, wait for it to finish, return what was measured."""
    from jury import services

    marks: dict[str, Any] = {}

    def before_dispatch() -> None:
        # CPU is counted from here: what start_run spent before (rendering, inserting the
        # calls) is outside the wall time too.
        marks["cpu_before"] = cpu.snapshot() if cpu else None
        marks["dispatch_start"] = time.time()
        marks["dispatch_start_perf"] = time.perf_counter()

    def after_dispatch() -> None:
        marks["dispatch_end_perf"] = time.perf_counter()

    sampler = PgSampler(url, query_chars=110)
    stats_before = pg_stats(url)
    sampler.start()
    marks["t0"] = time.perf_counter()
    with around_dispatch(before_dispatch, after_dispatch):
        run = services.start_run(study=study, judges=judges, actor=user, dispatch=True)
    finished = wait_until_finished(run.pk, workers, timeout)
    marks["polled"] = time.perf_counter()
    cpu_after = cpu.snapshot() if cpu else None
    sampler.stop.set()
    sampler.join()
    stats_after = pg_stats(url)
    run.refresh_from_db()
    return {
        "name": name,
        "run": run,
        "finished": finished,
        **timings(run, marks),
        **cpu_used(cpu, marks, cpu_after),
        "sampler": sampler,
        **{k: stats_after[k] - stats_before[k] for k in ("commits", "rollbacks", "deadlocks")},
        "server": server.stats(),
    }


def wait_until_finished(run_pk: int, workers: Workers, timeout: float) -> bool:
    """Poll the run's status every 100 ms; False after `timeout` s; stop if a worker died."""
    from jury.models import JuryRun

    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        status = JuryRun.objects.filter(pk=run_pk).values_list("status", flat=True).first()
        if status == JuryRun.Status.FINISHED:
            return True
        workers.check_alive()
        time.sleep(0.1)
    return False


def timings(run: Any, marks: dict[str, Any]) -> dict[str, float]:
    """The wall time from the first task sent to the run's finished_at, and its parts."""
    t0 = marks["t0"]
    start = marks.get("dispatch_start", time.time())
    end = run.finished_at.timestamp() if run.finished_at else time.time()
    dispatch_start = marks.get("dispatch_start_perf", t0)
    return {
        "wall": end - start,
        "create_seconds": dispatch_start - t0,
        "dispatch_seconds": marks.get("dispatch_end_perf", t0) - dispatch_start,
        "polled_wall": marks["polled"] - dispatch_start,
        "dispatch_start": start,
    }


def cpu_used(cpu: CpuMeter | None, marks: dict[str, Any], after: Any) -> dict[str, Any]:
    """CPU per part from the first task sent to the end of the polling."""
    if not cpu or "cpu_before" not in marks:
        return {"cpu": {}, "cpu_others": []}
    before = marks["cpu_before"]
    return {"cpu": CpuMeter.delta(before, after), "cpu_others": CpuMeter.others(before, after)}
