"""Benchmark of item imports: 50,000 items from one JSONL file through the import service.

    .venv/bin/python bench/bench_import.py [--items 50000]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python bench/bench_import.py

Times the import, the same file again (idempotent) and a bare create_items of the same rows
(the baseline: what the pipeline costs on top of saving). Procedure: bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "medhelm_site.test_settings")

MODELS = ("vendor-a/model-large", "vendor-b/model-medium", "vendor-c/model-small")


def make_jsonl(n_items: int, task_names: list[str], seed: int = 2025) -> bytes:
    rng = random.Random(seed)
    words = [
        "patient",
        "presents",
        "with",
        "acute",
        "chest",
        "pain",
        "dyspnoea",
        "fever",
        "history",
        "of",
        "hypertension",
        "diabetes",
        "medication",
        "dose",
        "renal",
        "function",
        "troponin",
        "ECG",
        "imaging",
        "follow-up",
        "advice",
        "risk",
        "benefit",
        "contraindication",
        "allergy",
        "guideline",
        "recommends",
        "monitoring",
    ]

    def text(n_words: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n_words))

    lines = []
    n_cases = -(-n_items // len(MODELS))
    for case in range(n_cases):
        question, reference, task = text(50), text(45), rng.choice(task_names)
        for model in MODELS:
            if len(lines) == n_items:
                break
            row = {
                "external_id": f"case-{case:06d}",
                "model": model,
                "input": question,
                "output": text(90),
                "reference": reference,
                "task": task,
                "benchmark": "bench_qa",
                "metadata": {"source": "synthetic", "case": case},
            }
            lines.append(json.dumps(row, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8")


def create_bench_database(workdir: Path) -> tuple[str, str]:
    """A migrated throwaway database (SQLite under workdir, else next to DATABASE_URL's):
    (its name, the engine's vendor)."""
    from django.db import connection

    engine = connection.vendor
    # create_test_db gives a migrated database we may drop; on SQLite under workdir.
    connection.settings_dict.setdefault("TEST", {})["NAME"] = (
        str(workdir / "bench-db.sqlite3") if engine == "sqlite" else f"bench_import_{os.getpid()}"
    )
    db_name = connection.creation.create_test_db(
        verbosity=0, autoclobber=True, serialize=False, keepdb=False
    )
    return db_name, engine


def timed_import(study: Any, user: Any, data: bytes, label: str) -> tuple[float, Any]:
    """Import `data` into `study` in this process; print and return (seconds, the job). The
    progress callback that ends the checks splits the time into read + check and save."""
    from annotation import imports

    marks: dict[str, float] = {}

    def on_progress(job) -> None:
        if job.total_rows and job.processed_rows >= job.total_rows:
            marks.setdefault("checked", time.perf_counter())

    t0 = time.perf_counter()
    job = imports.start_import(
        study=study,
        uploaded_name="bench.jsonl",
        content=data,
        file_format="jsonl",
        actor=user,
        background=False,
        on_progress=on_progress,
    )
    seconds = time.perf_counter() - t0
    assert job.status == "succeeded", job.errors[:5]
    checked = marks.get("checked", t0 + seconds) - t0
    print(
        f"  {label:<28} {seconds:7.2f} s  {job.total_rows / seconds:9,.0f} rows/s  "
        f"created {job.created_items:,}, unchanged {job.unchanged_items:,}  "
        f"(read + check {checked:.2f} s, save {seconds - checked:.2f} s)"
    )
    return seconds, job


def bare_create_items(study: Any, user: Any, data: bytes) -> float:
    """The baseline: create_items with the rows already parsed and checked; its seconds."""
    from annotation import imports, services
    from annotation.imports import parse_jsonl, validate_rows

    rows, errors = validate_rows(
        parsed=parse_jsonl(data), task_names=imports.task_names_for(study=study)
    )
    assert not errors
    t0 = time.perf_counter()
    services.create_items(study=study, rows=rows, actor=user)
    return time.perf_counter() - t0


def run(n_items: int, engine: str, db_name: str) -> None:
    """The import, the same file again, and the baseline, with their ratios."""
    from django.contrib.auth import get_user_model

    from annotation import services
    from delphi.models import TaxonomyNode
    from delphi.services import ensure_medhelm_taxonomy
    from tests.factories import MEDHELM_CRITERIA

    taxonomy = ensure_medhelm_taxonomy()
    task_names = list(
        TaxonomyNode.objects.filter(
            version=taxonomy, kind=TaxonomyNode.Kind.SUBCATEGORY
        ).values_list("name", flat=True)
    )
    user = get_user_model().objects.create_user(username="bench", password=None)

    def new_study(name: str):
        return services.create_study(
            name=name, created_by=user, criteria=MEDHELM_CRITERIA, taxonomy_version=taxonomy
        )

    data = make_jsonl(n_items, task_names)
    print(
        f"bench_import: {n_items:,} items ({len(MODELS)} models), "
        f"{len(data) / 1e6:.1f} MB JSONL, {engine} ({db_name})"
    )
    study = new_study("bench")
    first_s, first = timed_import(study, user, data, "import")
    assert first.created_items == n_items
    second_s, second = timed_import(study, user, data, "same file again")
    assert (second.created_items, second.unchanged_items) == (0, n_items)
    base_s = bare_create_items(new_study("bench baseline"), user, data)
    print(f"  {'baseline: bare create_items':<28} {base_s:7.2f} s  {n_items / base_s:9,.0f} rows/s")
    print(
        f"  import / baseline = {first_s / base_s:.2f}x; "
        f"re-import / import = {second_s / first_s:.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=50_000)
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench-import-"))
    if "DATABASE_URL" not in os.environ:
        os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"

    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    settings.MEDIA_ROOT = workdir / "media"
    db_name, engine = create_bench_database(workdir)
    try:
        run(args.items, engine, db_name)
    finally:
        connection.creation.destroy_test_db(db_name, verbosity=0)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
