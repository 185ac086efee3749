"""What the benchmarks that run the site against PostgreSQL share: where the project and its
Python are, the environment the site's processes get, the bench database's life, CPU
readings from /proc, a pg_stat_activity sampler and a plain-text table. Imported by the
bench scripts (their folder is on sys.path when they run), never by the site."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]

# The project's virtualenv; else (a git worktree without one) the one running this script.
VENV_BIN = ROOT / ".venv" / "bin"
PYTHON = str(VENV_BIN / "python")
if not (VENV_BIN / "python").exists():
    VENV_BIN, PYTHON = Path(sys.executable).parent, sys.executable
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


def app_env(db_url: str, data_dir: Path, **settings: str) -> dict[str, str]:
    """The environment of the site's processes: this one's without any site setting, then
    production settings (DEBUG off, CONN_MAX_AGE=60) on the bench database, then `settings`."""
    env = {k: v for k, v in os.environ.items() if k not in APP_SETTINGS}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "medhelm_site.settings",
            "DJANGO_DEBUG": "0",
            "ALLOWED_HOSTS": "127.0.0.1",
            "DATABASE_URL": db_url,
            "DATABASE_CONN_MAX_AGE": "60",
            "MEDHELM_DATA_DIR": str(data_dir),
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
            **settings,
        }
    )
    return env


def project_on_path() -> None:
    """The project's packages importable (run as a script, only bench/ is on sys.path)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def django_setup() -> None:
    project_on_path()
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stat_cpu_seconds(stat: str) -> float:
    """utime + stime from the text of a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat."""
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (all its threads), from /proc; 0 if it is gone."""
    try:
        return stat_cpu_seconds(Path(f"/proc/{pid}/stat").read_text())
    except OSError:
        return 0.0


def process_cpu_seconds() -> dict[int, tuple[str, float]]:
    """Every process on the machine: pid -> (name, utime + stime)."""
    found: dict[int, tuple[str, float]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
            found[int(entry.name)] = (name, stat_cpu_seconds(stat))
    return found


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent busy since boot (/proc/stat: all but idle and iowait)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except OSError:
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """CPU seconds of named parts (each a list of pids, read at every snapshot), the whole
    machine and, with `by_process`, every process on it (to name the busiest others)."""

    def __init__(self, parts: Callable[[], dict[str, list[int]]], by_process: bool = False):
        self.parts, self.by_process = parts, by_process

    def snapshot(self) -> dict[str, Any]:
        taken: dict[str, Any] = {
            name: {p: cpu_seconds(p) for p in pids} for name, pids in self.parts().items()
        }
        taken["machine"] = {0: machine_busy_seconds()}
        if self.by_process:
            taken["processes"] = process_cpu_seconds()
        return taken

    @staticmethod
    def delta(before: dict, after: dict) -> dict[str, float]:
        """CPU seconds per part; "everything else" is what the machine spent beyond them."""
        named = {k: v for k, v in after.items() if k != "processes"}
        used = {k: sum(v - before[k].get(pid, 0.0) for pid, v in named[k].items()) for k in named}
        machine = used.pop("machine")
        used["everything else on the machine"] = max(0.0, machine - sum(used.values()))
        return used

    @staticmethod
    def others(before: dict, after: dict, n: int = 4) -> list[tuple[str, float]]:
        """The processes outside the named parts that spent most CPU, by name (processes
        that ended meanwhile are not seen)."""
        known = {pid for k, part in after.items() if k != "processes" for pid in part}
        spent: Counter[str] = Counter()
        for pid, (name, seconds) in after["processes"].items():
            if pid not in known:
                spent[name] += seconds - before["processes"].get(pid, (name, 0.0))[1]
        return [(name, seconds) for name, seconds in spent.most_common(n) if seconds >= 0.05]


class PgSampler(threading.Thread):
    """Samples pg_stat_activity of the bench database every 100 ms: active backends, backends
    waiting on a lock, and which statements wait (their first `query_chars` characters)."""

    def __init__(self, url: str, query_chars: int) -> None:
        super().__init__(daemon=True)
        self.url, self.query_chars = url, query_chars
        self.stop = threading.Event()
        self.samples = 0
        self.active: list[int] = []
        self.waiting: list[int] = []
        self.waiting_statements: Counter[str] = Counter()
        self.error: str | None = None

    def run(self) -> None:
        import psycopg

        try:
            with psycopg.connect(self.url, autocommit=True) as conn:
                while not self.stop.wait(0.1):
                    rows = conn.execute(
                        """SELECT state, wait_event_type,
                                  left(regexp_replace(query, '\\s+', ' ', 'g'), %s::int)
                           FROM pg_stat_activity
                           WHERE datname = current_database() AND pid <> pg_backend_pid()""",
                        (self.query_chars,),
                    ).fetchall()
                    self.samples += 1
                    self.active.append(sum(1 for r in rows if r[0] == "active"))
                    waiting = [r[2] for r in rows if r[1] == "Lock"]
                    self.waiting.append(len(waiting))
                    self.waiting_statements.update(waiting)
        except Exception as exc:  # a diagnostic: never fail the bench for it
            self.error = repr(exc)


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
