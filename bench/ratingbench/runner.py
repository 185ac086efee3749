"""The rating bench from start to end: a fresh database seeded in a subprocess, gunicorn,
a warm-up, the baseline phase, the rating phase, the checks, the report; gunicorn is
stopped whatever happens."""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import secrets
import shutil
import tempfile
import time
from pathlib import Path

from _support import (
    PYTHON,
    CpuMeter,
    PgSampler,
    app_env,
    db_name,
    drop_database,
    pg_backend_pids,
    pg_stats,
    recreate_database,
    run_step,
)

from ratingbench.celery_layout import CeleryLayout, flush_broker
from ratingbench.clients import (
    Clinician,
    Endpoint,
    Phase,
    baseline_client,
    clinician_client,
    run_phase,
)
from ratingbench.gunicorn import Gunicorn
from ratingbench.integrity import integrity
from ratingbench.internal import run_internal_step
from ratingbench.load import Connection
from ratingbench.reporting import Measured, Setup, report


def rating_env(url: str, data_dir: Path, broker: str | None = None) -> dict[str, str]:
    """gunicorn's settings: production ones, served over plain HTTP on 127.0.0.1; with a
    broker, the production layout's (the site's Celery tasks go to it)."""
    extra = {"CELERY_BROKER_URL": broker} if broker else {}
    return app_env(
        url,
        data_dir,
        SECRET_KEY=secrets.token_urlsafe(50),
        SECURE_SSL_REDIRECT="0",
        SESSION_COOKIE_SECURE="0",
        CSRF_COOKIE_SECURE="0",
        **extra,
    )


def bench(args: argparse.Namespace) -> int:
    """The whole bench; exit status 0 when the integrity checks pass and no request failed."""
    url = args.database_url
    load_before = os.getloadavg()
    data_dir = Path(tempfile.mkdtemp(prefix="bench_rating_"))
    env = rating_env(url, data_dir, args.broker)
    server: Gunicorn | None = None
    celery: CeleryLayout | None = None
    ok = True
    try:
        setup = set_up(args, env)
        if args.broker:
            flush_broker(args.broker)
            celery = CeleryLayout(env, data_dir)
            celery.wait_ready()
        server = Gunicorn(env, args.workers, args.threads, data_dir / "gunicorn.log")
        server.wait_ready()
        measured = measure(args, setup, server, env, load_before, celery)
        ok = report(args, setup, measured)
    finally:
        if server is not None:
            server.stop()
        if celery is not None:
            celery.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
        if args.drop:
            drop_database(url)
        else:
            print(f"database {db_name(url)} kept for inspection (--drop removes it)")
    return 0 if ok else 1


def set_up(args: argparse.Namespace, env: dict[str, str]) -> Setup:
    """Create and migrate the database, collect static files, seed the study."""
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    recreate_database(args.database_url)
    times["create"] = time.perf_counter() - t0
    _, times["migrate"] = run_step([PYTHON, "manage.py", "migrate", "--noinput"], env, "migrate")
    _, times["static"] = run_step(
        [PYTHON, "manage.py", "collectstatic", "--noinput"], env, "collectstatic"
    )
    seed, times["seed"] = run_internal_step(
        "seed", {"clinicians": args.clinicians, "items": args.items, "k": args.k}, env
    )
    clinicians = [Clinician(c["username"], c["token"], c["session"]) for c in seed["clinicians"]]
    return Setup(seed=seed, clinicians=clinicians, times=times)


def measure(
    args: argparse.Namespace,
    setup: Setup,
    server: Gunicorn,
    env: dict[str, str],
    load_before: tuple[float, float, float],
    celery: CeleryLayout | None = None,
) -> Measured:
    """Warm-up, the baseline and rating phases, the integrity check and the query counts;
    gunicorn is stopped at the end. With the Celery layout, the agreement watch is given
    time to catch up with the last ratings and its state is read."""
    url = args.database_url
    cpu = CpuMeter(
        lambda: {
            "gunicorn": [server.proc.pid, *server.worker_pids()],
            "postgres": pg_backend_pids(url),
            "load generator": [os.getpid()],
            **({"celery workers": celery.pids()} if celery else {}),
        }
    )
    warm_up(server, setup)
    Connection.keepalive = args.keepalive
    workers = server.worker_pids()
    base = baseline_phase(args, server, cpu, setup, workers)
    sampler = PgSampler(url, query_chars=140)
    stats_before = pg_stats(url)
    sampler.start()
    rate = rating_phase(args, server, cpu, setup, workers)
    sampler.stop.set()
    sampler.join()
    stats_after = pg_stats(url)
    load_after = os.getloadavg()
    ok_submits = {handle for c in setup.clinicians for handle in c.submitted}
    check = integrity(url, setup.study_id, ok_submits)
    watch = watch_state(url, setup.study_id, celery) if celery else None
    first = setup.clinicians[0]
    queries, _ = run_internal_step(
        "queries",
        {
            "study_id": setup.study_id,
            "username": first.username,
            "token": first.token,
            "criteria": setup.criteria,
        },
        env,
    )
    server_log_tail = server.tail(15)
    server.stop()
    return Measured(
        base=base,
        rate=rate,
        sampler=sampler,
        stats_before=stats_before,
        stats_after=stats_after,
        load=(load_before[0], load_after[0]),
        check=check,
        ok_submits=ok_submits,
        queries=queries,
        server_log_tail=server_log_tail,
        port=server.port,
        watch=watch,
    )


def warm_up(server: Gunicorn, setup: Setup) -> None:
    """Every worker thread loads templates, URLs and a database connection: each clinician
    opens one rating page, and the baseline client runs for a second."""
    warm = {k: Endpoint(k) for k in ("resume", "page", "submit", "login")}
    rng = random.Random(1)

    def clients(deadline: float) -> list:
        tasks = [
            clinician_client(
                server.port, setup.study_id, setup.criteria, c, deadline, warm, rng, submit=False
            )
            for c in setup.clinicians
        ]
        return [*tasks, baseline_client(server.port, time.perf_counter() + 1.0, warm["login"])]

    asyncio.run(run_phase(clients, 60.0))
    if any(ep.errors for ep in warm.values()):
        print("warm-up errors:", {k: dict(ep.statuses) for k, ep in warm.items()})


def baseline_phase(
    args: argparse.Namespace, server: Gunicorn, cpu: CpuMeter, setup: Setup, workers: list[int]
) -> Phase:
    """As many clients as clinicians GET /accounts/login/ for the same duration."""
    base = Phase("baseline", {"login": Endpoint("GET /accounts/login/ (baseline)")})

    def clients(deadline: float) -> list:
        ep = base.endpoints["login"]
        return [baseline_client(server.port, deadline, ep) for _ in setup.clinicians]

    duration = args.baseline_duration or args.duration
    return timed_phase(base, clients, args, server, cpu, workers, duration)


def rating_phase(
    args: argparse.Namespace, server: Gunicorn, cpu: CpuMeter, setup: Setup, workers: list[int]
) -> Phase:
    """Every clinician loops: redirect, rating page, submit (with --think, a pause after)."""
    rate = Phase(
        "rating",
        {
            "resume": Endpoint("GET /studies/<id>/rate/ (302)"),
            "page": Endpoint("GET /studies/<id>/rate/<a>/ (page)"),
            "submit": Endpoint("POST /api/assignments/<a>/submit/"),
        },
    )
    rngs = [random.Random(1000 + i) for i in range(len(setup.clinicians))]

    def clients(deadline: float) -> list:
        return [
            clinician_client(
                server.port,
                setup.study_id,
                setup.criteria,
                c,
                deadline,
                rate.endpoints,
                r,
                think=args.think,
            )
            for c, r in zip(setup.clinicians, rngs, strict=True)
        ]

    return timed_phase(rate, clients, args, server, cpu, workers)


def timed_phase(
    phase: Phase,
    clients,
    args: argparse.Namespace,
    server: Gunicorn,
    cpu: CpuMeter,
    workers: list[int],
    duration: float | None = None,
) -> Phase:
    """Run `clients` for `duration` (default --duration) seconds; the phase's CPU and
    access-log figures."""
    before = cpu.snapshot()
    log_start = server.access_offset()
    phase.elapsed, phase.connections = asyncio.run(
        run_phase(clients, duration or args.duration, server.port, workers)
    )
    phase.cpu = CpuMeter.delta(before, cpu.snapshot())
    time.sleep(0.3)  # the worker logs a request just after answering it
    phase.take_access_log(server, log_start, server.access_offset(), workers)
    return phase


#: How long the agreement watch may take to catch up with the last rating (its debounce,
#: MEDHELM_WATCH_DEBOUNCE_SECONDS, plus one refresh) before the bench reads its state.
WATCH_CATCH_UP_SECONDS = 120.0


def watch_state(url: str, study_id: int, celery: CeleryLayout) -> dict:
    """The agreement watch after the run: its last refresh's counts once no refresh is queued
    and it has seen every submission (or the catch-up time ran out), and the worker errors."""
    import psycopg

    sql = (
        "SELECT computed_at, submissions_seen, requested_at, error FROM annotation_agreementwatch "
        "WHERE study_id = %s"
    )
    count = (
        "SELECT count(*) FROM annotation_assignment WHERE study_id = %s AND status = 'submitted'"
    )
    t0 = time.monotonic()
    with psycopg.connect(url, autocommit=True) as conn:
        submitted = conn.execute(count, (study_id,)).fetchone()[0]
        row = None
        while time.monotonic() - t0 < WATCH_CATCH_UP_SECONDS:
            row = conn.execute(sql, (study_id,)).fetchone()
            if row and row[2] is None and row[1] >= submitted:
                break
            time.sleep(1.0)
    computed_at, seen, requested_at, error = row or (None, 0, None, "no watch row")
    return {
        "submitted": submitted,
        "seen": seen,
        "caught_up": bool(row) and requested_at is None and seen >= submitted,
        "catch_up_seconds": time.monotonic() - t0,
        "computed_at": computed_at,
        "error": error or "",
        "worker_errors": celery.errors(),
    }
