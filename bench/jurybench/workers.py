"""The Celery worker processes of the jury bench: started as in production, or instrumented."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

from _support import PYTHON, ROOT, VENV_BIN

from jurybench.config import ENTRY


def worker_args(n: int, threads: int) -> list[str]:
    """`celery worker` options of worker `n`: a thread pool, quiet, no gossip."""
    return [
        "-P",
        "threads",
        "-c",
        str(threads),
        "-n",
        f"bench-jury-{n}@%h",
        "--loglevel",
        "WARNING",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]


class Workers:
    """W Celery worker processes of T threads each, in their own session (stopped together)."""

    def __init__(
        self,
        env: dict[str, str],
        workers: int,
        threads: int,
        log_dir: Path,
        instrument: bool,
        cprofile: bool,
    ) -> None:
        self.procs: list[subprocess.Popen] = []
        self.logs = []
        self.instrument_out: list[Path] = []
        self.log_dir = log_dir
        instrumented = instrument or cprofile
        for n in range(workers):
            args = worker_args(n, threads)
            wenv = dict(env)
            if instrumented:
                out = log_dir / f"worker-{n}.json"
                self.instrument_out.append(out)
                wenv["BENCH_INSTRUMENT_OUT"] = str(out)
                wenv["BENCH_CPROFILE"] = "1" if cprofile else "0"
                cmd = [PYTHON, ENTRY, "--internal", "worker", *args]
            else:
                cmd = [str(VENV_BIN / "celery"), "-A", "medhelm_site", "worker", *args]
            self.start(n, cmd, wenv)
        program = (
            "bench_jury.py --internal worker" if instrumented else "celery -A medhelm_site worker"
        )
        self.command = " ".join([program, *worker_args(workers - 1, threads)]).replace(
            f"bench-jury-{workers - 1}@", "bench-jury-N@"
        )

    def start(self, n: int, cmd: list[str], env: dict[str, str]) -> None:
        log = open(self.log_dir / f"worker-{n}.log", "w")  # noqa: SIM115 - closed in stop()
        self.logs.append(log)
        self.procs.append(
            subprocess.Popen(
                cmd,
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def check_alive(self) -> None:
        for n, p in enumerate(self.procs):
            if p.poll() is not None:
                raise SystemExit(f"worker {n} exited ({p.returncode}):\n{self.tail(n)}")

    def tail(self, n: int, lines: int = 30) -> str:
        self.logs[n].flush()
        text = (self.log_dir / f"worker-{n}.log").read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        for p in self.procs:  # warm shutdown first: the instrumented ones dump their figures
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for log in self.logs:
            log.close()
