"""The production layout's Celery side for the rating bench (--broker): the two workers and
beat of docs/deploy/run-production.sh, started with its commands against the bench database
and the given broker, so the agreement watch's refreshes that ratings queue run while the
clinicians rate, as they do in production, and their cost shows in the figures."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from _support import PYTHON, ROOT

from tests.support.processes import child_pids

#: As docs/deploy/run-production.sh starts them (WORKER_CONCURRENCY 2).
WORKERS = (
    ("worker-default", ["--queues", "celery,metrics", "--hostname", "default@bench-%h"]),
    ("worker-jury", ["--queues", "jury", "--hostname", "jury@bench-%h"]),
)


def flush_broker(url: str) -> None:
    """An empty broker database: no task left by an earlier run reaches these workers."""
    if url.startswith(("redis://", "rediss://")):
        import redis

        redis.Redis.from_url(url).flushdb()


class CeleryLayout:
    """Two Celery workers and beat, each in a session of its own; stopped at the end."""

    def __init__(self, env: dict[str, str], data_dir: Path, concurrency: int = 2) -> None:
        celery = [PYTHON, "-m", "celery", "-A", "medhelm_site"]
        self.logs: dict[str, Path] = {}
        self.procs: dict[str, subprocess.Popen] = {}
        commands = {
            name: [
                *celery,
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                str(concurrency),
                *opts,
            ]
            for name, opts in WORKERS
        }
        commands["beat"] = [
            *celery,
            "beat",
            "--loglevel",
            "INFO",
            "--schedule",
            str(data_dir / "celerybeat-schedule"),
        ]
        for name, cmd in commands.items():
            self.logs[name] = data_dir / f"{name}.log"
            with open(self.logs[name], "w") as log:
                self.procs[name] = subprocess.Popen(
                    cmd,
                    cwd=ROOT,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )

    def wait_ready(self, timeout: float = 90.0) -> None:
        """Each worker logged "ready" (its queues are consumed)."""
        deadline = time.monotonic() + timeout
        waiting = [name for name, _ in WORKERS]
        while waiting and time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise SystemExit(
                        f"celery {name} exited ({proc.returncode}):\n{self.tail(name)}"
                    )
            waiting = [
                n for n in waiting if " ready." not in self.logs[n].read_text(errors="replace")
            ]
            time.sleep(0.3)
        if waiting:
            raise SystemExit(f"celery {waiting} not ready within {timeout:.0f} s")

    def pids(self) -> list[int]:
        """The workers, beat and the workers' pool processes (for the CPU meter)."""
        pids = []
        for proc in self.procs.values():
            pids += [proc.pid, *child_pids(proc.pid)]
        return pids

    def errors(self) -> list[str]:
        """Lines of the workers' logs that report a failed or crashed task."""
        found = []
        for name, _ in WORKERS:
            for line in self.logs[name].read_text(errors="replace").splitlines():
                if " ERROR/" in line or "raised unexpected" in line or "Traceback" in line:
                    found.append(f"{name}: {line[:200]}")
        return found

    def tail(self, name: str, n: int = 20) -> str:
        return "\n".join(self.logs[name].read_text(errors="replace").splitlines()[-n:])

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
