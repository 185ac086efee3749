"""A MedHELM-sized agreement report: its background task's time, and a stored report opened.

    .venv/bin/python bench/bench_reports.py [--opens 50] [--resamples 1000] [--seed 16]
        [--clinicians 29] [--cases 1000] [--workers 2] [--threads 4] [--keep] [--reuse DIR]

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
import random
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

from _support import (
    PYTHON,
    app_env,
    django_setup,
    print_table,
    project_on_path,
    run_step,
    sigterm_as_exit,
)

ENTRY = str(Path(__file__).resolve())
JSON_MARK = "BENCH_JSON:"
MODELS = ("model-a", "model-b", "model-c")
#: Each model's quality offset on the 1-5 scale, so that the leaderboard has an order.
MODEL_OFFSET = {"model-a": 0.4, "model-b": 0.0, "model-c": -0.4}
CATEGORIES = (
    "Clinical decision support",
    "Clinical note generation",
    "Patient communication and education",
    "Medical research assistance",
    "Administration and workflow",
)
BENCHMARKS_PER_CATEGORY = 2
JUDGES = (("judge-gpt", "openai"), ("judge-claude", "anthropic"), ("judge-gemini", "openai"))
TARGET_RATIO = 3.0


# --- in the subprocesses (the site's settings) ---------------------------------------------------


def _clip(x: float) -> int:
    return min(5, max(1, round(x)))


def _session_for(user: Any) -> str:
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    s = SessionStore()
    s[SESSION_KEY] = str(user.pk)
    s[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    s[HASH_SESSION_KEY] = user.get_session_auth_hash()
    s.create()
    return s.session_key


def _seed_items(study: Any, coordinator: Any, cases: int, rng: random.Random) -> dict[int, float]:
    """cases x 3 models, in 5 categories and 10 benchmarks; item id -> its true quality."""
    from ratingbench.seeding import case_texts

    from annotation import services
    from annotation.models import Item
    from delphi.models import TaxonomyNode, TaxonomyVersion

    version = TaxonomyVersion.objects.create(name="bench: MedHELM categories")
    nodes = [
        TaxonomyNode.objects.create(version=version, kind="category", name=name)
        for name in CATEGORIES
    ]
    n_benchmarks = len(CATEGORIES) * BENCHMARKS_PER_CATEGORY
    rows, quality = [], {}
    for case in range(cases):
        input_text, reference, _ = case_texts(case, rng)
        case_quality = rng.gauss(3.0, 0.8)
        bench_no = case % n_benchmarks
        for model in MODELS:
            _, _, output = case_texts(case, rng)
            ext = f"case-{case:05d}"
            quality[(ext, model)] = case_quality + MODEL_OFFSET[model]
            rows.append(
                services.ItemRow(
                    external_id=ext,
                    input_text=input_text,
                    reference_text=reference,
                    output_text=output,
                    model_name=model,
                    benchmark=f"bench-{bench_no:02d}",
                    taxonomy_node_id=nodes[bench_no // BENCHMARKS_PER_CATEGORY].pk,
                )
            )
    services.create_items(study=study, rows=rows, actor=coordinator)
    return {
        pk: quality[(ext, model)]
        for pk, ext, model in Item.objects.filter(study=study).values_list(
            "pk", "external_id", "model_name"
        )
    }


def _seed_ratings(study: Any, quality: dict[int, float], rng: random.Random) -> int:
    """Every assignment submitted, one rating per criterion (bulk)."""
    from django.utils import timezone

    from annotation.models import Assignment, Rating

    now = timezone.now()
    criteria = list(study.criteria.order_by("position", "pk"))
    assignments = list(Assignment.objects.filter(study=study).values_list("pk", "item_id"))
    bias: dict[int, float] = {}
    ratings = []
    for pk, item_id in assignments:
        b = bias.setdefault(pk % 97, rng.gauss(0, 0.3))
        for n, criterion in enumerate(criteria):
            v = _clip(quality[item_id] + b + 0.1 * n + rng.gauss(0, 0.7))
            ratings.append(
                Rating(
                    assignment_id=pk,
                    criterion=criterion,
                    value=v,
                    first_value=v,
                    first_cannot_assess=False,
                    first_submitted_at=now,
                )
            )
    Rating.objects.bulk_create(ratings, batch_size=2000)
    Assignment.objects.filter(study=study).update(
        status=Assignment.Status.SUBMITTED,
        started_at=now,
        first_submitted_at=now,
        submitted_at=now,
        time_spent_seconds=60,
    )
    return len(ratings)


def _seed_jury(study: Any, coordinator: Any, quality: dict[int, float], rng: random.Random) -> int:
    """3 judges, one finished call each per item with a verdict on every criterion (bulk)."""
    from decimal import Decimal

    from django.utils import timezone

    from jury.models import Judge, JudgeCall, JudgeScore, JuryRun, PromptTemplate

    now = timezone.now()
    criteria = list(study.criteria.order_by("position", "pk"))
    template = PromptTemplate.objects.create(
        name="bench", study=study, body="Rate {{ output }}", created_by=coordinator
    )
    run = JuryRun.objects.create(
        study=study,
        prompt_template=template,
        status=JuryRun.Status.FINISHED,
        created_by=coordinator,
        started_at=now,
        finished_at=now,
    )
    judges = [
        Judge.objects.create(
            name=name,
            provider=provider,
            model_id=f"{name}-model",
            price_input_per_mtok=Decimal("2.5"),
            price_output_per_mtok=Decimal("10"),
        )
        for name, provider in JUDGES
    ]
    calls = JudgeCall.objects.bulk_create(
        [
            JudgeCall(
                run=run,
                judge=judge,
                item_id=item_id,
                prompt_hash=f"{judge.pk:04d}{item_id:060d}",
                prompt_text="(bench prompt)",
                status=JudgeCall.Status.OK,
                raw_output="{}",
                input_tokens=1800,
                output_tokens=220,
                cost=Decimal("0.00670000"),
                latency_ms=900,
                attempts=1,
                finished_at=now,
            )
            for judge in judges
            for item_id in quality
        ],
        batch_size=2000,
    )
    scores = []
    for call in calls:
        bias = 0.2 * (call.judge_id % 3 - 1)
        for criterion in criteria:
            scores.append(
                JudgeScore(
                    item_id=call.item_id,
                    judge_id=call.judge_id,
                    criterion=criterion,
                    call=call,
                    value=_clip(quality[call.item_id] + bias + rng.gauss(0, 0.6)),
                    explanation="Accurate and complete; minor omissions.",
                )
            )
    JudgeScore.objects.bulk_create(scores, batch_size=2000)
    return len(scores)


def _seed_metrics(quality: dict[int, float], rng: random.Random) -> int:
    from jury.models import MetricScore

    rows = []
    for item_id, q in quality.items():
        rows.append(
            MetricScore(
                item_id=item_id,
                metric=MetricScore.Metric.ROUGE_L_F1,
                value=min(1.0, max(0.0, 0.1 + 0.05 * q + rng.gauss(0, 0.04))),
            )
        )
        rows.append(
            MetricScore(
                item_id=item_id,
                metric=MetricScore.Metric.BERTSCORE_F1,
                value=min(1.0, max(0.0, 0.78 + 0.02 * q + rng.gauss(0, 0.015))),
                scorer_model="distilbert-base-uncased",
                scorer_layer=5,
            )
        )
    MetricScore.objects.bulk_create(rows, batch_size=2000)
    return len(rows)


def internal_seed(params: dict[str, Any]) -> dict[str, Any]:
    """The study, seeded from params["seed"]; the coordinator's session and step times."""
    django_setup()
    from ratingbench.seeding import seed_study, seed_users

    from annotation import services
    from annotation.models import Assignment

    rng = random.Random(params["seed"])
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    coordinator, users, _tokens, _sessions = seed_users(params["clinicians"])
    study = seed_study(coordinator, users, k=2)
    study.name = "bench: MedHELM-sized report"
    study.save(update_fields=["name"])
    timings["users, study, members"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    quality = _seed_items(study, coordinator, params["cases"], rng)
    timings["create_items"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    services.assign_items(study=study, actor=coordinator, seed=params["seed"])
    timings["assign_items"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    n_ratings = _seed_ratings(study, quality, rng)
    timings["ratings (bulk)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    n_verdicts = _seed_jury(study, coordinator, quality, rng)
    timings["judge calls and scores (bulk)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    n_metrics = _seed_metrics(quality, rng)
    timings["metric scores (bulk)"] = time.perf_counter() - t0
    return {
        "study_id": study.pk,
        "coordinator_id": coordinator.pk,
        "session": _session_for(coordinator),
        "items": len(quality),
        "assignments": Assignment.objects.filter(study=study).count(),
        "ratings": n_ratings,
        "judge_scores": n_verdicts,
        "metric_scores": n_metrics,
        "timings": timings,
    }


def internal_task(params: dict[str, Any]) -> dict[str, Any]:
    """Queue a report job and run it here as the worker would (run_report_job); its time,
    the time of each stage (from its progress) and of each stored rendering."""
    django_setup()
    import dataclasses

    from django.contrib.auth import get_user_model
    from django.urls import reverse

    from agreement.models import ReportJob, ReportRendering
    from agreement.services import jobs, renderings
    from annotation.models import RatingStudy

    study = RatingStudy.objects.get(pk=params["study_id"])
    actor = get_user_model().objects.get(pk=params["coordinator_id"])
    stages: list[tuple[str, float]] = []
    writer_call = jobs._ProgressWriter.__call__

    def noting(self: Any, stage: str, done: int, total: int) -> None:
        if not stages or stages[-1][0] != stage:
            stages.append((stage, time.perf_counter()))
        writer_call(self, stage, done, total)

    rendering_times: dict[str, float] = {}

    def timed(spec: Any) -> Any:
        def produce(snapshot: Any) -> bytes:
            t = time.perf_counter()
            try:
                return spec.produce(snapshot)
            finally:
                rendering_times[spec.kind] = time.perf_counter() - t

        return dataclasses.replace(spec, produce=produce)

    jobs._ProgressWriter.__call__ = noting  # type: ignore[method-assign]
    for kind, spec in list(renderings.RENDERINGS.items()):
        renderings.RENDERINGS[kind] = timed(spec)
    # The job row as the site makes it (parameters checked, seed, audit), without sending it
    # to a broker (no on_commit send): the worker's part, run_report_job, is what is timed.
    with mock.patch.object(jobs.transaction, "on_commit"):
        job = jobs.request_report(
            study=study,
            actor=actor,
            parameters={
                "n_resamples": params["resamples"],
                "seed": params["seed"],
                "title": "bench",
            },
            background=True,
        )
    t0 = time.perf_counter()
    job = jobs.run_report_job(job.pk)
    total = time.perf_counter() - t0
    if job.status != ReportJob.Status.FINISHED:
        raise SystemExit(f"report job {job.pk} ended {job.status}: {job.error}")
    stage_times = [
        (name, (stages[i + 1][1] if i + 1 < len(stages) else t0 + total) - start)
        for i, (name, start) in enumerate(stages)
    ]
    sizes = dict(
        ReportRendering.objects.filter(snapshot=job.snapshot).values_list("kind", "content")
    )
    urls = {"page": reverse("agreement:report", args=[study.pk, job.snapshot_id])}
    for fmt in renderings.DOWNLOADS:
        urls[fmt] = reverse("agreement:export", args=[study.pk, job.snapshot_id, fmt])
    return {
        "urls": urls,
        "job_id": job.pk,
        "snapshot_id": job.snapshot_id,
        "cells": job.cells_total,
        "task_seconds": total,
        "stages": stage_times,
        "renderings": rendering_times,
        "rendering_bytes": {k: len(bytes(v)) for k, v in sizes.items()},
    }


INTERNAL: dict[str, Any] = {}  # filled below, once every mode is defined


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


def bench_env(data_dir: Path) -> dict[str, str]:
    """Production settings on the data folder's SQLite database, served over plain HTTP."""
    return app_env(
        f"sqlite:///{data_dir / 'medhelm.sqlite3'}",
        data_dir,
        SECRET_KEY=secrets.token_urlsafe(50),
        SECURE_SSL_REDIRECT="0",
        SESSION_COOKIE_SECURE="0",
        CSRF_COOKIE_SECURE="0",
        DATABASE_CONN_MAX_AGE="60",
    )


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
        },
        env,
    )
    print(
        f"\nreport task (run_report_job, {args.resamples} resamples, {task['cells']} "
        f"bootstrapped cells): {task['task_seconds']:.1f} s"
    )
    for stage, seconds in task["stages"]:
        print(f"  stage {stage:<56} {seconds:7.2f} s")
    for kind, seconds in task["renderings"].items():
        size = task["rendering_bytes"].get(kind, 0)
        print(f"  rendering {kind:<52} {seconds:7.2f} s  {size / 1024:8.0f} KiB")
    return {"session": seed["session"], "urls": task["urls"]}


def internal_state(params: dict[str, Any]) -> dict[str, Any]:
    """For --reuse: a new session of the bench coordinator and the newest report's URLs."""
    django_setup()
    from django.contrib.auth import get_user_model
    from django.urls import reverse

    from agreement.models import ReportSnapshot
    from agreement.services import DOWNLOADS

    snapshot = ReportSnapshot.objects.order_by("-pk").first()
    if snapshot is None:
        raise SystemExit("no report in the reused data folder")
    urls = {"page": reverse("agreement:report", args=[snapshot.study_id, snapshot.pk])}
    for fmt in DOWNLOADS:
        urls[fmt] = reverse("agreement:export", args=[snapshot.study_id, snapshot.pk, fmt])
    coordinator = get_user_model().objects.get(username="bench-coordinator")
    return {"session": _session_for(coordinator), "urls": urls}


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
    env = bench_env(data_dir)
    try:
        return serve_and_open(args, env, data_dir, seed_and_compute(args, env))
    finally:
        if args.keep:
            print(f"data folder kept: {data_dir} (--reuse it to open its report again)")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clinicians", type=int, default=29)
    p.add_argument("--cases", type=int, default=1000, help="items per model")
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--opens", type=int, default=50, help="GETs of each page")
    p.add_argument("--seed", type=int, default=16, help="of the data and of the report")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--keep", action="store_true", help="keep the temporary data folder")
    p.add_argument(
        "--reuse",
        metavar="DIR",
        help="a data folder kept by --keep: serve it and open its newest report again "
        "(no seeding, no task; e.g. to compare page timings of two versions of the code)",
    )
    p.add_argument("--internal", choices=sorted(INTERNAL), help=argparse.SUPPRESS)
    return p


INTERNAL.update({"seed": internal_seed, "task": internal_task, "state": internal_state})


def main() -> int:
    args = parser().parse_args()
    if args.internal:
        run_internal(args.internal)
        return 0
    with sigterm_as_exit():
        return bench(args)


if __name__ == "__main__":
    sys.exit(main())
