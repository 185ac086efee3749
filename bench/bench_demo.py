"""`manage.py rundemo` from a fresh data folder, as `make demo` starts it: seconds from start
until every automatic metric is stored and until the jury run has ended, read from the demo's
SQLite database every 2 s. Baseline: one worker for every queue, where the metrics came only
after the last of the 48 judge calls (metrics / jury >= 1).

    .venv/bin/python bench/bench_demo.py [--timeout 3600] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

from _support import APP_SETTINGS, PYTHON, ROOT, free_port, print_table

FINAL = ("finished", "failed", "cancelled")


def progress(db: Path) -> tuple[int, int, int, list[str]] | None:
    """(items, metric scores, judge calls done, run statuses), or None before the tables exist."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
            items = con.execute("select count(*) from annotation_item").fetchone()[0]
            metrics = con.execute("select count(*) from jury_metricscore").fetchone()[0]
            done = con.execute(
                "select count(*) from jury_judgecall where status != 'pending'"
            ).fetchone()[0]
            runs = [r[0] for r in con.execute("select status from jury_juryrun")]
    except sqlite3.Error:
        return None
    return items, metrics, done, runs


def watch(db: Path, started: float, timeout: float) -> dict[str, float | None]:
    """Seconds since `started` until every item has both metrics and every run has ended."""
    found: dict[str, float | None] = {"metrics": None, "jury": None}
    while time.monotonic() - started < timeout and None in found.values():
        state = progress(db)
        if state is not None:
            items, metrics, done, runs = state
            elapsed = time.monotonic() - started
            if items and metrics >= 2 * items and found["metrics"] is None:
                found["metrics"] = elapsed
            if runs and all(r in FINAL for r in runs) and found["jury"] is None:
                found["jury"] = elapsed
            print(f"{elapsed:6.0f} s  metrics {metrics}/{2 * items}  calls done {done}  {runs}")
        time.sleep(2)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--keep", action="store_true", help="keep the data folder")
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="bench-demo-"))
    env = {k: v for k, v in os.environ.items() if k not in APP_SETTINGS}
    env.update({"DJANGO_DEBUG": "1", "MEDHELM_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"})
    port = free_port()
    with open(data_dir / "rundemo.log", "w") as log:
        demo = subprocess.Popen(
            [PYTHON, "manage.py", "rundemo", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        started = time.monotonic()
        try:
            found = watch(data_dir / "medhelm.sqlite3", started, args.timeout)
        finally:
            demo.send_signal(signal.SIGINT)  # rundemo stops its web server and workers
            demo.wait(timeout=60)
    metrics, jury = found["metrics"], found["jury"]

    def shown(seconds: float | None) -> str:
        return f"{seconds:.0f} s" if seconds is not None else f"not within {args.timeout:.0f} s"

    print_table(
        ["from start until", "seconds"],
        [["every metric stored", shown(metrics)], ["the jury run ended", shown(jury)]],
    )
    if metrics is not None and jury is not None:
        print(f"metrics / jury: {metrics / jury:.2f} (baseline, one worker for all: >= 1)")
    if args.keep:
        print(f"rundemo's log and data: {data_dir}")
    else:
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
