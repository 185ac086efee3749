"""Benchmark of HELM suite imports: a suite of 300 runs and ~100,000 request states, as the
command imports a suite folder (packed into a zip on disk, then read run by run).

    .venv/bin/python bench/bench_suite_import.py [--runs 300 --states 334]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python bench/bench_suite_import.py

Baseline: the single-run import rate (request states per second) of one run directory of
the same shape, imported alone through the same service. Prints the suite's rate as a ratio
to it, the re-import (every item unchanged), and the process's peak memory (max RSS) after
the single run and after the suite: streaming means the suite adds little to it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "medhelm_site.test_settings")

from bench.bench_import import create_bench_database  # noqa: E402

MODELS = ("vendor-a/model-large", "vendor-b/model-medium", "vendor-c/model-small")
WORDS = ["patient", "presents", "with", "acute", "chest", "pain", "fever", "renal", "dose"]


def write_run(folder: Path, *, benchmark: str, model: str, states: int, seed: int) -> None:
    """A run directory shaped like HELM's: run_spec.json and scenario_state.json."""
    rng = random.Random(seed)

    def text(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    name = f"{benchmark}:model={model.replace('/', '_')}"
    run = folder / name
    run.mkdir(parents=True)
    (run / "run_spec.json").write_text(json.dumps({"name": name}))
    request_states = [
        {
            "instance": {
                "id": f"id{i}",
                "input": {"text": text(60)},
                "references": [{"output": {"text": text(40)}, "tags": ["correct"]}],
                "split": "test",
            },
            "train_trial_index": 0,
            "request": {"model": model, "prompt": text(80)},
            "result": {"success": True, "completions": [{"text": text(90)}]},
        }
        for i in range(states)
    ]
    (run / "scenario_state.json").write_text(
        json.dumps({"adapter_spec": {}, "request_states": request_states})
    )


def import_folder(study: Any, user: Any, folder: Path, label: str) -> tuple[float, Any]:
    """Import a run directory or suite folder as manage.py import_items does; (s, job)."""
    from annotation import imports
    from annotation.imports.suite import pack_helm_folder

    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as packed:
        pack_helm_folder(folder, packed)
        packed.seek(0)
        job = imports.start_import(
            study=study,
            uploaded_name=f"{folder.name}.zip",
            content=packed,
            file_format="helm",
            actor=user,
            background=False,
        )
    seconds = time.perf_counter() - t0
    assert job.status == "succeeded", job.errors[:5]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"  {label:<22} {seconds:8.2f} s  {job.total_rows / seconds:9,.0f} states/s  "
        f"created {job.created_items:,}, unchanged {job.unchanged_items:,}  "
        f"(max RSS so far {rss:,.0f} MB)"
    )
    return seconds, job


def run(n_runs: int, n_states: int, workdir: Path, engine: str, db_name: str) -> None:
    from django.contrib.auth import get_user_model

    from annotation import services
    from delphi.services import ensure_medhelm_taxonomy
    from tests.factories import MEDHELM_CRITERIA

    taxonomy = ensure_medhelm_taxonomy()
    user = get_user_model().objects.create_user(username="bench", password=None)

    def new_study(name: str):
        return services.create_study(
            name=name, created_by=user, criteria=MEDHELM_CRITERIA, taxonomy_version=taxonomy
        )

    single = workdir / "single"
    write_run(single, benchmark="bench_single", model=MODELS[0], states=n_states, seed=1)
    suite = workdir / "suite"
    for k in range(n_runs):
        write_run(
            suite,
            benchmark=f"bench_{k // len(MODELS):03d}",
            model=MODELS[k % len(MODELS)],
            states=n_states,
            seed=k,
        )
    size = sum(p.stat().st_size for p in suite.rglob("*.json"))
    print(
        f"bench_suite_import: {n_runs} runs x {n_states} request states = "
        f"{n_runs * n_states:,} ({size / 1e6:.0f} MB of JSON), {engine} ({db_name})"
    )
    [run_dir] = list(single.iterdir())
    warm = workdir / "warm"  # the first import loads modules and tasks: not timed
    write_run(warm, benchmark="bench_warm", model=MODELS[0], states=10, seed=2)
    import_folder(new_study("warm-up"), user, next(warm.iterdir()), "warm-up (not compared)")
    base_s, _ = import_folder(new_study("single"), user, run_dir, "baseline: one run")
    study = new_study("suite")
    suite_s, job = import_folder(study, user, suite, "suite")
    assert job.created_items == n_runs * n_states and job.runs_done == n_runs
    again_s, again = import_folder(study, user, suite, "suite again")
    assert again.unchanged_items == n_runs * n_states
    base_rate = n_states / base_s
    suite_rate = n_runs * n_states / suite_s
    print(
        f"  suite rate / single-run rate = {suite_rate / base_rate:.2f}x; "
        f"re-import / import = {again_s / suite_s:.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--states", type=int, default=334)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-suite-"))
    if "DATABASE_URL" not in os.environ:
        os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"

    import django

    django.setup()
    logging.getLogger("celery").setLevel(logging.WARNING)  # the inline steps' task results
    from django.conf import settings
    from django.db import connection

    settings.MEDIA_ROOT = workdir / "media"
    db_name, engine = create_bench_database(workdir)
    try:
        run(args.runs, args.states, workdir, engine, db_name)
    finally:
        connection.creation.destroy_test_db(db_name, verbosity=0)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
