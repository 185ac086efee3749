"""What the benchmarks that run the site against PostgreSQL share: where the project and its
Python are, the environment the site's processes get, the bench database's life, CPU
readings from /proc, and a plain-text table. Imported by the bench scripts (their folder is
on sys.path when they run), never by the site."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = ROOT / ".venv" / "bin"
PYTHON = str(VENV_BIN / "python") if (VENV_BIN / "python").exists() else sys.executable
# Settings the site reads from the environment: none leaks in from the caller's shell.
APP_SETTINGS = frozenset(
    {
        "DJANGO_DEBUG",
        "SECRET_KEY",
        "ALLOWED_HOSTS",
        "CSRF_TRUSTED_ORIGINS",
        "DATABASE_URL",
        "DATABASE_CONN_MAX_AGE",
        "CELERY_BROKER_URL",
        "CELERY_RESULT_BACKEND",
        "MEDHELM_DATA_DIR",
        "MEDHELM_AFTER_IMPORT_TASKS",
        "SECURE_SSL_REDIRECT",
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "SECURE_HSTS_SECONDS",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS",
        "SECURE_HSTS_PRELOAD",
        "USE_X_FORWARDED_PROTO",
        "SILENCED_SYSTEM_CHECKS",
        "LOG_LEVEL",
        "TIME_ZONE",
        "DJANGO_SETTINGS_MODULE",
        "EMAIL_BACKEND",
    }
)


def django_setup() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "medhelm_site.settings")
    import django

    django.setup()


# --- the bench database -------------------------------------------------------------------------


def db_name(url: str) -> str:
    name = urlsplit(url).path.lstrip("/")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise SystemExit(f"bench database name {name!r}: use letters, digits and _")
    return name


def maintenance_url(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/postgres", parts.query, ""))


def recreate_database(url: str) -> None:
    import psycopg
    from psycopg import sql

    name = db_name(url)
    with psycopg.connect(maintenance_url(url), autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def drop_database(url: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(maintenance_url(url), autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(db_name(url)))
        )


def pg_stats(url: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            """SELECT xact_commit, xact_rollback, deadlocks FROM pg_stat_database
               WHERE datname = current_database()"""
        ).fetchone()
    return {"commits": row[0], "rollbacks": row[1], "deadlocks": row[2]}


def pg_backend_pids(url: str) -> list[int]:
    import psycopg

    with psycopg.connect(url) as conn:
        return [
            r[0]
            for r in conn.execute(
                """SELECT pid FROM pg_stat_activity
                   WHERE datname = current_database() AND pid <> pg_backend_pid()"""
            )
        ]


# --- processes and CPU --------------------------------------------------------------------------


def run_step(args: list[str], env: dict[str, str], what: str) -> tuple[str, float]:
    """Run a set-up command to its end; (its stdout, seconds). Its output is shown only if it
    fails, and then the bench stops."""
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"{what} failed (exit {proc.returncode})")
    return proc.stdout, elapsed


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (all its threads), from /proc; 0 if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent busy since boot (/proc/stat: all but idle and iowait)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except OSError:
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def sigterm_as_exit() -> Iterator[None]:
    """SIGTERM ends the bench as an exception would, so its finally blocks stop the servers
    and workers it started."""

    def handler(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def print_table(header: list[str], rows: list[list[str]]) -> None:
    """Columns padded to their widest cell: the first left-aligned, the others right."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def fmt(r: list[str]) -> str:
        return "  ".join(
            str(c).ljust(w) if i == 0 else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )

    print(fmt(header))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(fmt(r))
