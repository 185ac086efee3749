"""Start a real Celery worker process against the test database and a given broker."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from django.conf import settings
from django.db import connection

from tests.support.processes import child_pids, wait_for

ROOT = Path(settings.BASE_DIR)
__all__ = ["child_pids", "running_worker", "test_database_url", "wait_for"]


def test_database_url() -> str:
    """A DATABASE_URL naming the test database this process uses right now."""
    s = connection.settings_dict
    if s["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{s['NAME']}"
    if s["ENGINE"] == "django.db.backends.postgresql":
        auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
        return f"postgres://{auth}@{s['HOST'] or 'localhost'}:{s['PORT'] or 5432}/{s['NAME']}"
    raise RuntimeError(f"no worker support for {s['ENGINE']}")


@contextlib.contextmanager
def running_worker(
    *,
    broker_url: str,
    result_backend: str,
    log_path: Path,
    concurrency: int = 1,
    extra_env: dict[str, str] | None = None,
    queues: Sequence[str] = (),
    hostname: str | None = None,
    beat_schedule: Path | None = None,
) -> Iterator[subprocess.Popen]:
    """A `celery worker` process on the test database, stopped afterwards. Without `queues`
    it consumes every queue the settings declare, as a production worker started without -Q
    does; with `beat_schedule` (a file path) it also runs Celery beat (`-B`), as the demo's
    first worker does, its schedule kept in that file."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "medhelm_site.test_settings",
        "DATABASE_URL": test_database_url(),
        "CELERY_BROKER_URL": broker_url,
        "CELERY_RESULT_BACKEND": result_backend,
        **(extra_env or {}),
    }
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "medhelm_site",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                str(concurrency),
                "--without-gossip",
                "--without-mingle",
                *(["--queues", ",".join(queues)] if queues else []),
                *(["--hostname", hostname] if hostname else []),
                *(["--beat", "--schedule-filename", str(beat_schedule)] if beat_schedule else []),
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
