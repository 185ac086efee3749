"""What the jury bench runs on: the site's environment, Redis, the run lock, the CPU parts."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from _support import CpuMeter, app_env, db_name, maintenance_url, pg_backend_pids

from jurybench.config import API_KEY_ENV
from jurybench.fake_server import FakeServer
from jurybench.workers import Workers


def jury_env(db_url: str, redis_url: str, data_dir: Path) -> dict[str, str]:
    """The workers' (and this process's) settings: Redis as broker, a judge API key."""
    return app_env(
        db_url,
        data_dir,
        SECRET_KEY="bench-jury-" + "x" * 50,
        CELERY_BROKER_URL=redis_url,
        CELERY_RESULT_BACKEND=redis_url,
        MEDHELM_AFTER_IMPORT_TASKS="",
        **{API_KEY_ENV: "sk-bench-jury-0000"},
    )


def flush_redis(url: str) -> int | None:
    """Empty the bench's Redis database; returns the Redis server's pid (for CPU figures)."""
    import redis

    client = redis.Redis.from_url(url)
    client.flushdb()
    with contextlib.suppress(Exception):
        return int(client.info("server")["process_id"])
    return None


def exclusive_run(url: str, redis_url: str) -> Any:
    """A session advisory lock (on the maintenance database) named after the bench database and
    Redis database: a second bench_jury on the same ones would drop the first one's database
    under its workers. Returns the connection holding the lock; closing it releases the lock."""
    import psycopg

    conn = psycopg.connect(maintenance_url(url), autocommit=True)
    name = f"bench_jury {db_name(url)} {redis_url}"
    if not conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (name,)).fetchone()[0]:
        conn.close()
        raise SystemExit(
            f"another bench_jury run is using database {db_name(url)} or {redis_url}: wait for "
            "it, or give this one --database-url and --redis-url of its own"
        )
    return conn


def cpu_meter(workers: Workers, server: FakeServer, url: str, redis_pid: int | None) -> CpuMeter:
    """CPU of the workers, the fake provider, PostgreSQL's backends, Redis, this process."""
    return CpuMeter(
        lambda: {
            "celery worker(s)": workers.pids(),
            "fake provider": [server.proc.pid],
            "postgres": pg_backend_pids(url),
            "redis": [redis_pid] if redis_pid else [],
            "bench (dispatch, polling)": [os.getpid()],
        },
        by_process=True,
    )
