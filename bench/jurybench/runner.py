"""The jury bench from start to end: set up the database, Redis, the fake provider and the
workers; run the warm-up and the three phases; report; stop everything it started."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _support import (
    APP_SETTINGS,
    PYTHON,
    db_name,
    django_setup,
    drop_database,
    recreate_database,
    run_step,
)

from jurybench.environment import cpu_meter, exclusive_run, flush_redis, jury_env
from jurybench.fake_server import FakeServer
from jurybench.instrumentation_report import report_instrumentation
from jurybench.phases import run_phase
from jurybench.reporting import print_header, report_checked_phase
from jurybench.seeding import seed
from jurybench.workers import Workers


@dataclass
class Rig:
    """What the bench started, so that its end stops it whatever happened."""

    data_dir: Path
    server: FakeServer | None = None
    workers: Workers | None = None
    times: dict[str, float] = field(default_factory=dict)


def bench(args: argparse.Namespace) -> int:
    """The whole bench under the run lock; exit status 0 when every phase's checks pass."""
    lock = exclusive_run(args.database_url, args.redis_url)
    try:
        return run_bench(args)
    finally:
        lock.close()


def run_bench(args: argparse.Namespace) -> int:
    load_before = os.getloadavg()
    rig = Rig(Path(tempfile.mkdtemp(prefix="bench_jury_")))
    problems: dict[str, list[str]] = {}
    try:
        seeded, redis_pid = set_up(args, rig)
        judges = seeded["judges"]
        n_judges = len(judges)
        ideal = args.items * n_judges * args.latency / (n_judges * args.concurrency)
        phases = run_phases(args, rig, seeded, redis_pid, ideal)
        load_after = os.getloadavg()
        rig.workers.stop()
        print_header(args, judges, rig.workers.command, (load_before[0], load_after[0]), rig.times)
        for result, cached in zip(phases[1:], (False, False, True), strict=True):
            problems[result["name"]] = report_checked_phase(result, args, judges, ideal, cached)
        if args.instrument or args.cprofile:
            from jury.models import JudgeCall

            runs = [phase["run"] for phase in phases]
            n_calls = JudgeCall.objects.filter(run__in=runs).count()
            report_instrumentation(rig.workers.instrument_out, n_calls)
    finally:
        tear_down(args, rig)
    failed = [name for name, found in problems.items() if found]
    if failed:
        print(f"\nFAILED phases: {failed}")
    return 1 if failed or len(problems) < 3 else 0


def set_up(args: argparse.Namespace, rig: Rig) -> tuple[dict[str, Any], int | None]:
    """A fresh database and Redis db, Django in this process on the workers' settings, the
    fake provider, the seeded studies and judges, the workers. Returns (seeded, Redis pid)."""
    url = args.database_url
    env = jury_env(url, args.redis_url, rig.data_dir)
    t0 = time.perf_counter()
    recreate_database(url)
    redis_pid = flush_redis(args.redis_url)
    _, rig.times["migrate"] = run_step(
        [PYTHON, "manage.py", "migrate", "--noinput"], env, "migrate"
    )
    rig.times["setup"] = time.perf_counter() - t0
    os.environ.update(env)  # this process runs start_run and the checks on the same settings
    for k in APP_SETTINGS - set(env):
        os.environ.pop(k, None)
    django_setup()
    import medhelm_site.celery  # noqa: F401 - binds the tasks to the app on Redis

    rig.server = FakeServer(args.latency, rig.data_dir / "fake-provider.log")
    t0 = time.perf_counter()
    seeded = seed(args.items, rig.server.url, args.concurrency)
    rig.times["seed"] = time.perf_counter() - t0
    rig.workers = Workers(
        env, args.workers, args.threads, rig.data_dir, args.instrument, args.cprofile
    )
    return seeded, redis_pid


def run_phases(
    args: argparse.Namespace, rig: Rig, seeded: dict[str, Any], redis_pid: int | None, ideal: float
) -> list[dict[str, Any]]:
    """Warm-up (not timed: the workers start, import the SDKs and open connections in every
    thread), then 1: no failures, 2: new items with failures, 3: phase 1's items again."""
    server, workers, studies = rig.server, rig.workers, seeded["studies"]
    cpu = cpu_meter(workers, server, args.database_url, redis_pid)
    timeout = max(120.0, 20 * ideal)
    common = {
        "judges": seeded["judges"],
        "user": seeded["user"],
        "server": server,
        "workers": workers,
        "url": args.database_url,
    }
    t0 = time.perf_counter()
    server.configure(latency=args.latency, failure_rate=0.0)
    warm = run_phase(name="warm-up", study=studies["warmup"], cpu=None, timeout=180, **common)
    if not warm["finished"]:
        raise SystemExit("the warm-up run did not finish: are the workers up?\n" + workers.tail(0))
    rig.times["warm"] = time.perf_counter() - t0

    server.configure(latency=args.latency, failure_rate=0.0)
    server.reset()
    p1 = run_phase(
        name="1: no failures", study=studies["phase1"], cpu=cpu, timeout=timeout, **common
    )
    server.configure(
        latency=args.latency,
        failure_rate=args.failure_rate,
        failure_outcomes=["429", "500"],
        retry_after=args.retry_after,
        seed=2,
    )
    server.reset()
    p2 = run_phase(
        name=f"2: {100 * args.failure_rate:g}% 429/500 (Retry-After {args.retry_after:g} s)",
        study=studies["phase2"],
        cpu=cpu,
        timeout=timeout,
        **common,
    )
    server.configure(latency=args.latency, failure_rate=0.0)
    server.reset()
    p3 = run_phase(
        name="3: phase 1 again (cache)", study=studies["phase1"], cpu=cpu, timeout=timeout, **common
    )
    return [warm, p1, p2, p3]


def tear_down(args: argparse.Namespace, rig: Rig) -> None:
    """Stop the workers and the fake provider, empty Redis, drop the database with --drop."""
    if rig.workers is not None:
        rig.workers.stop()
    if rig.server is not None:
        rig.server.stop()
    with contextlib.suppress(Exception):
        flush_redis(args.redis_url)
    shutil.rmtree(rig.data_dir, ignore_errors=True)
    if args.drop:
        drop_database(args.database_url)
    else:
        print(f"database {db_name(args.database_url)} kept for inspection (--drop removes it)")
