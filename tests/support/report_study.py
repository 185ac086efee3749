"""The MedHELM bench's study (bench/bench_reports.py) at a size a test can afford, seeded by
the bench's own code (bench/reportbench/seeding.py): items by 3 models in categories and
benchmarks, each rated by 2 of the clinicians on the MedHELM rubric, 3 judges with a finished
call and a verdict on every item, ROUGE-L and BERTScore on every item; written in bulk. The
suite's guard on the report job (tests/agreement/reports/test_report_job_scale.py) thereby
runs the job the bench times, on the same shape of data."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from tests.factories import StudyWithMembers, make_study_with_members

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:  # the bench's packages import each other from there
    sys.path.insert(0, str(BENCH))

from reportbench.seeding import (  # noqa: E402
    seed_items,
    seed_jury,
    seed_metrics,
    seed_ratings,
)


def medhelm_shaped_study(*, cases: int, n_clinicians: int, seed: int = 16) -> StudyWithMembers:
    """``cases`` x 3 models items, 2 of ``n_clinicians`` per item, every assignment rated."""
    from annotation import services

    rng = random.Random(seed)
    members = make_study_with_members(n_items=0, n_clinicians=n_clinicians, k=2)
    study, coordinator = members.study, members.coordinator
    quality = seed_items(study, coordinator, cases, rng)
    services.assign_items(study=study, actor=coordinator, seed=seed)
    seed_ratings(study, quality, rng)
    seed_jury(study, coordinator, quality, rng)
    seed_metrics(quality, rng)
    return members
