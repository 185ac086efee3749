"""gunicorn serving the site for the rating bench: started on a free port in a session of its
own, read through its access log (worker, status, time in the worker), stopped at the end."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

from _support import ROOT, free_port

from ratingbench.config import GUNICORN
from tests.support.processes import child_pids


def connections_per_worker(port: int, workers: list[int]) -> list[int]:
    """Established client connections held by each gunicorn worker (from ss -tnp)."""
    try:
        out = subprocess.run(
            ["ss", "-Htnp", "state", "established", f"( sport = :{port} )"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    owners = Counter(int(m) for m in re.findall(r"pid=(\d+)", out))
    return [owners.get(w, 0) for w in workers]


def gunicorn_command(workers: int, threads: int, port: int, access_log: Path) -> list[str]:
    return [
        GUNICORN,
        "medhelm_site.wsgi",
        "-w",
        str(workers),
        "-k",
        "gthread",
        "--threads",
        str(threads),
        "-b",
        f"127.0.0.1:{port}",
        "--graceful-timeout",
        "10",
        # Per request: worker pid, status, time in the worker (microseconds), request line.
        "--access-logfile",
        str(access_log),
        "--access-logformat",
        '%(p)s %(s)s %(D)s "%(r)s"',
    ]


class Gunicorn:
    def __init__(self, env: dict[str, str], workers: int, threads: int, log_path: Path) -> None:
        self.port = free_port()
        self.workers, self.threads = workers, threads
        self.log_path = log_path
        self.access_path = log_path.with_name("access.log")
        self.cmd = gunicorn_command(workers, threads, self.port, self.access_path)
        self.log = open(log_path, "w")  # noqa: SIM115 - closed in stop()
        # Its own session: a Ctrl-C in the terminal reaches this script, which stops it.
        self.proc = subprocess.Popen(
            self.cmd,
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 60.0) -> None:
        import http.client

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"gunicorn exited ({self.proc.returncode}):\n{self.tail()}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/accounts/login/")
                if conn.getresponse().status == 200 and len(self.worker_pids()) >= self.workers:
                    return
            except OSError:
                pass
            time.sleep(0.3)
        raise SystemExit(f"gunicorn did not answer within {timeout:.0f} s:\n{self.tail()}")

    def worker_pids(self) -> list[int]:
        return child_pids(self.proc.pid)

    def access_offset(self) -> int:
        try:
            return self.access_path.stat().st_size
        except OSError:
            return 0

    def access_records(self, start: int, end: int) -> list[tuple[int, int, float, str, str]]:
        """(worker pid, status, seconds in the worker, method, path) logged between offsets."""
        with open(self.access_path, "rb") as f:
            f.seek(start)
            text = f.read(end - start).decode("latin-1")
        records = []
        for m in re.finditer(r'^<(\d+)> (\d+) (\d+) "(\S+) (\S+)', text, re.M):
            path = urlsplit(m.group(5)).path
            records.append(
                (int(m.group(1)), int(m.group(2)), int(m.group(3)) / 1e6, m.group(4), path)
            )
        return records

    def tail(self, n: int = 30) -> str:
        self.log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()
