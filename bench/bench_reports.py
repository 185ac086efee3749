"""A MedHELM-sized agreement report: its background task's time, and a stored report opened.

    .venv/bin/python bench/bench_reports.py [--opens 50] [--resamples 1000] [--seed 16]
        [--clinicians 29] [--cases 1000] [--workers 2] [--threads 4] [--keep] [--reuse DIR]
        [--task-only] [--profile N] [--database-url postgres://postgres@127.0.0.1:5432/DB]

Seeds a study in a subprocess with the site's settings on a temporary MEDHELM_DATA_DIR and
its SQLite database (29 clinicians; 1,000 cases x 3 models = 3,000 items, k = 2 clinician
ratings per item on the MedHELM rubric; 3 judges with a verdict on every item; ROUGE-L and
BERTScore on every item), runs the report job (`run_report_job`, 1,000 resamples) in another
subprocess and times it with its stages and renderings, then serves the site with gunicorn
(production settings) and opens the stored report page and the login page 50 times each,
alternately, and downloads the stored PDF, CSV and JSON. Prints page p95 / login p95 (target
<= 3). Procedure: bench/README.md.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _support import (
    PYTHON,
    app_env,
    drop_database,
    print_table,
    project_on_path,
    recreate_database,
    run_step,
    sigterm_as_exit,
)
from reportbench.seeding import JUDGES, MODELS, internal_seed
from reportbench.task import internal_state, internal_task

ENTRY = str(Path(__file__).resolve())
JSON_MARK = "BENCH_JSON:"
TARGET_RATIO = 3.0
#: Issue 32's targets for the report job at the MedHELM size, in seconds: a stage's (those
#: named), and the whole job's: at most JOB_TARGET, aiming at JOB_GOAL.
STAGE_TARGETS = {"reading the scores": 3.0}
JOB_TARGET, JOB_GOAL = 30.0, 15.0


# --- in the subprocesses (the site's settings: reportbench) --------------------------------------

INTERNAL: dict[str, Any] = {"seed": internal_seed, "task": internal_task, "state": internal_state}


def run_internal(mode: str) -> None:
    params = json.loads(os.environ["BENCH_PARAMS"])
    print(JSON_MARK + json.dumps(INTERNAL[mode](params)))


def internal_step(mode: str, params: dict[str, Any], env: dict[str, str]) -> tuple[Any, float]:
    out, elapsed = run_step(
        [PYTHON, ENTRY, "--internal", mode],
        {**env, "BENCH_PARAMS": json.dumps(params)},
        f"{mode} subprocess",
    )
    line = next(x for x in reversed(out.splitlines()) if x.startswith(JSON_MARK))
    return json.loads(line[len(JSON_MARK) :]), elapsed


# --- in the bench -------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile of the values (q in [0, 100])."""
    s = sorted(values)
    rank = max(1, -(-len(s) * q // 100))  # ceil(n q / 100)
    return s[int(rank) - 1]


def fetch(port: int, path: str, session: str | None) -> tuple[float, int, bytes]:
    """One GET on a new connection, as a reverse proxy makes: (seconds, status, body)."""
    headers = {"Cookie": f"sessionid={session}"} if session else {}
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    return time.perf_counter() - t0, response.status, body


def opens(
    port: int, paths: dict[str, tuple[str, str | None]], n: int, check: dict[str, bytes]
) -> dict[str, list[float]]:
    """n rounds, each GETting every path once in turn (so that a noisy moment of the shared
    machine falls on all of them alike); every answer must be 200 and contain its check."""
    times: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(n):
        for name, (path, session) in paths.items():
            seconds, status, body = fetch(port, path, session)
            if status != 200 or check.get(name, b"") not in body:
                raise SystemExit(f"GET {path}: {status}, {len(body)} bytes: {body[:300]!r}")
            times[name].append(seconds)
    return times


def bench_env(data_dir: Path, database_url: str | None = None) -> dict[str, str]:
    """Production settings on the data folder's SQLite database (or ``database_url``),
    served over plain HTTP."""
    return app_env(
        database_url or f"sqlite:///{data_dir / 'medhelm.sqlite3'}",
        data_dir,
        SECRET_KEY=secrets.token_urlsafe(50),
        SECURE_SSL_REDIRECT="0",
        SESSION_COOKIE_SECURE="0",
        CSRF_COOKIE_SECURE="0",
        DATABASE_CONN_MAX_AGE="60",
    )


def against(seconds: float, target: float) -> str:
    """Where a time stands against its target (at the full size on a quiet machine)."""
    return f"({'within' if seconds <= target else 'ABOVE'} the target {target:g} s)"


def seed_and_compute(args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    """Migrate, collect static files, seed, run the report job; the reader's session and the
    stored report's URLs."""
    setup: dict[str, float] = {}
    _, setup["migrate"] = run_step([PYTHON, "manage.py", "migrate", "--noinput"], env, "migrate")
    _, setup["collectstatic"] = run_step(
        [PYTHON, "manage.py", "collectstatic", "--noinput"], env, "collectstatic"
    )
    seed, setup["seed"] = internal_step(
        "seed", {"clinicians": args.clinicians, "cases": args.cases, "seed": args.seed}, env
    )
    print(
        f"seeded in {setup['seed']:.1f} s: {args.clinicians} clinicians, {seed['items']} items "
        f"({args.cases} cases x {len(MODELS)} models), {seed['assignments']} assignments, "
        f"{seed['ratings']} ratings, {seed['judge_scores']} judge scores "
        f"({len(JUDGES)} judges), {seed['metric_scores']} metric scores"
    )
    for step, seconds in seed["timings"].items():
        print(f"  {step:<34} {seconds:6.2f} s")
    task, _ = internal_step(
        "task",
        {
            "study_id": seed["study_id"],
            "coordinator_id": seed["coordinator_id"],
            "resamples": args.resamples,
            "seed": args.seed,
            "profile": args.profile,
        },
        env,
    )
    seconds = task["task_seconds"]
    print(
        f"\nreport task (run_report_job, {args.resamples} resamples, {task['cells']} "
        f"bootstrapped cells): {seconds:.1f} s {against(seconds, JOB_TARGET)}, goal {JOB_GOAL:g} s"
    )
    for stage, seconds in task["stages"]:
        target = STAGE_TARGETS.get(stage)
        mark = against(seconds, target) if target is not None else ""
        print(f"  stage {stage:<56} {seconds:7.2f} s {mark}")
    for kind, seconds in task["renderings"].items():
        size = task["rendering_bytes"].get(kind, 0)
        print(f"  rendering {kind:<52} {seconds:7.2f} s  {size / 1024:8.0f} KiB")
    if task["profile"]:
        print(f"\nprofile of the report job (cProfile, top {args.profile}):\n{task['profile']}")
    return {"session": seed["session"], "urls": task["urls"]}


def serve_and_open(
    args: argparse.Namespace, env: dict[str, str], data_dir: Path, state: dict[str, Any]
) -> int:
    """gunicorn on the data folder; the pages' and downloads' latencies and the ratio."""
    from ratingbench.gunicorn import Gunicorn

    server = Gunicorn(env, args.workers, args.threads, data_dir / "gunicorn.log")
    try:
        server.wait_ready()
        session, urls = state["session"], state["urls"]
        paths = {
            "login page": ("/accounts/login/", None),
            "stored report page": (urls["page"], session),
        }
        check = {"stored report page": b'data-testid="table2"'}
        downloads = {
            f"stored {fmt.upper()} download": (urls[fmt], session) for fmt in ("pdf", "csv", "json")
        }
        # Warm-up: every worker thread loads templates, URLs and its database connection.
        opens(server.port, {**paths, **downloads}, args.workers * args.threads, check)
        times = opens(server.port, paths, args.opens, check)
        times.update(opens(server.port, downloads, args.opens, {}))
        _, _, page = fetch(server.port, urls["page"], session)
    finally:
        server.stop()
    rows = [
        [
            name,
            str(len(ts)),
            f"{percentile(ts, 50) * 1000:.1f}",
            f"{percentile(ts, 95) * 1000:.1f}",
            f"{max(ts) * 1000:.1f}",
        ]
        for name, ts in times.items()
    ]
    print(
        f"\ngunicorn -w {args.workers} --threads {args.threads} (production settings, "
        "SQLite), one request at a time, a new connection each; report page "
        f"{len(page) / 1024:.0f} KiB"
    )
    print_table(["GET", "n", "p50 ms", "p95 ms", "max ms"], rows)
    ratio = percentile(times["stored report page"], 95) / percentile(times["login page"], 95)
    verdict = "within" if ratio <= TARGET_RATIO else "ABOVE"
    print(
        f"\nstored report page p95 / login page p95 = {ratio:.3f} "
        f"({verdict} the target {TARGET_RATIO:g})"
    )
    return 0 if ratio <= TARGET_RATIO else 1


def bench(args: argparse.Namespace) -> int:
    project_on_path()
    if args.reuse:
        data_dir = Path(args.reuse).resolve()
        env = bench_env(data_dir)
        # the static files of the code being measured (the folder may be another version's)
        run_step([PYTHON, "manage.py", "collectstatic", "--noinput"], env, "collectstatic")
        state, _ = internal_step("state", {}, env)
        return serve_and_open(args, env, data_dir, state)
    data_dir = Path(tempfile.mkdtemp(prefix="bench_reports_"))
    env = bench_env(data_dir, args.database_url)
    if args.database_url:
        recreate_database(args.database_url)
    try:
        state = seed_and_compute(args, env)
        if args.task_only:
            return 0
        return serve_and_open(args, env, data_dir, state)
    finally:
        if args.keep:
            print(f"data folder kept: {data_dir} (--reuse it to open its report again)")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
            if args.database_url:
                drop_database(args.database_url)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clinicians", type=int, default=29)
    p.add_argument("--cases", type=int, default=1000, help="items per model")
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--opens", type=int, default=50, help="GETs of each page")
    p.add_argument("--seed", type=int, default=16, help="of the data and of the report")
    p.add_argument(
        "--database-url",
        metavar="URL",
        help="PostgreSQL instead of the data folder's SQLite, e.g. "
        "postgres://postgres@127.0.0.1:5432/medhelm_bench (DROPPED and recreated, dropped again "
        "at the end unless --keep)",
    )
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--keep", action="store_true", help="keep the temporary data folder")
    p.add_argument(
        "--task-only", action="store_true", help="seed and run the report job; serve nothing"
    )
    p.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="run the report job under cProfile and print its N top entries (by own and by "
        "cumulative time; the profiler slows the job down, so its stage times are not the "
        "bench's)",
    )
    p.add_argument(
        "--reuse",
        metavar="DIR",
        help="a data folder kept by --keep: serve it and open its newest report again "
        "(no seeding, no task; e.g. to compare page timings of two versions of the code)",
    )
    p.add_argument("--internal", choices=sorted(INTERNAL), help=argparse.SUPPRESS)
    return p


def main() -> int:
    args = parser().parse_args()
    if args.internal:
        run_internal(args.internal)
        return 0
    with sigterm_as_exit():
        return bench(args)


if __name__ == "__main__":
    sys.exit(main())
