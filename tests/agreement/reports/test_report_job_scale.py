"""The report job at a small scale of the MedHELM bench (bench/bench_reports.py): what it costs
must not grow with the study. Its queries are pinned (the same number for a study three times
the size), and the per-resample work is called once per chunk of resamples, never once per
resample: the functions that evaluate every resample at once are counted, and the count is
the same at 20 and at 200 resamples. No timing is asserted (the machine is shared)."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from unittest import mock

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from agreement.models import ReportJob
from agreement.services import jobs
from agreement.stats import bootstrap, icc_twoway_incomplete
from agreement.stats.medhelm import alpha, fitted, machine
from tests.factories import StudyWithMembers
from tests.support.report_study import medhelm_shaped_study

#: The job's queries, whatever the study's size (111 at issue 32): reading the scores, the study's
#: records, the progress writes, the snapshot, its audit row and its stored renderings.
MAX_QUERIES = 111

#: The functions each evaluate a whole (resamples x items) weights array at once; where they
#: live and the names their callers use.
PER_RESAMPLE_WORK = {
    "resample_weights": [(bootstrap, "resample_weights")],
    "fit_from_weights": [(fitted, "fit_from_weights"), (icc_twoway_incomplete, "fit_from_weights")],
    # the search for connected sets of clinicians: once per fit, for all its resamples
    "connected_components": [(icc_twoway_incomplete, "connected_components")],
    "weighted_alphas": [(alpha, "weighted_alphas")],
    # the machine's ordinal alpha from each column's own ranks (agreement.stats.alpha_paired)
    "paired_ordinal_alpha": [(machine, "paired_ordinal_alpha")],
    "consistency_icc2": [(machine, "consistency_icc2")],
}


@contextmanager
def counting_calls() -> Iterator[Counter]:
    calls: Counter = Counter()
    patches = []
    for name, places in PER_RESAMPLE_WORK.items():
        for module, attr in places:
            original = getattr(module, attr)

            def counted(*args, _name=name, _original=original, **kwargs):
                calls[_name] += 1
                return _original(*args, **kwargs)

            patches.append(mock.patch.object(module, attr, counted))
    for p in patches:
        p.start()
    try:
        yield calls
    finally:
        for p in reversed(patches):
            p.stop()


def run_job(study, actor, *, resamples: int, calls: bool = False) -> tuple[ReportJob, int, Counter]:
    """The worker's part of a report job (run_report_job), its queries and counted calls."""
    with mock.patch.object(jobs.transaction, "on_commit"):
        job = jobs.request_report(
            study=study,
            actor=actor,
            parameters={"n_resamples": resamples, "seed": 5, "title": "scale"},
            background=True,
        )
    # progress written at each change of stage only (not once a second: a count of writes
    # that depends on the machine's speed)
    with (
        mock.patch.object(jobs, "PROGRESS_EVERY_SECONDS", float("inf")),
        # the calls are counted in this process: the rows and figure files computed here too
        override_settings(AGREEMENT_REPORT_PROCESSES=1),
        counting_calls() if calls else nullcontext(Counter()) as counted,
        CaptureQueriesContext(connection) as queries,
    ):
        job = jobs.run_report_job(job.pk)
    assert job.status == ReportJob.Status.FINISHED, job.error
    return job, len(queries), counted


@dataclass
class LargeJob:
    members: StudyWithMembers
    job: ReportJob
    queries: int
    calls: Counter


@pytest.fixture(scope="module")
def large_once(module_db) -> LargeJob:
    """The larger study (60 cases) and its job at 20 resamples, with its queries and calls
    counted; both tests compare another job with it."""
    with module_db():
        large = medhelm_shaped_study(cases=60, n_clinicians=6, seed=2)
        job, queries, calls = run_job(large.study, large.coordinator, resamples=20, calls=True)
        return LargeJob(members=large, job=job, queries=queries, calls=calls)


@pytest.fixture
def large(db, large_once) -> LargeJob:
    return copy.deepcopy(large_once)


def test_the_report_jobs_queries_do_not_grow_with_the_study(large) -> None:
    small = medhelm_shaped_study(cases=20, n_clinicians=6, seed=1)
    job_small, n_small, _ = run_job(small.study, small.coordinator, resamples=20)
    job_large, n_large = large.job, large.queries
    assert job_large.cells_total == job_small.cells_total > 0
    assert n_small == n_large, (n_small, n_large)
    assert n_large <= MAX_QUERIES


def test_the_per_resample_work_is_called_per_cell_not_per_resample(large) -> None:
    job, few = large.job, large.calls
    _, _, many = run_job(large.members.study, large.members.coordinator, resamples=200, calls=True)
    # the paired ordinal alpha hands the resamples of a chunk that hold a near-tie across its
    # columns (values equal but for rounding) to weighted_alphas in one call: at most one
    # more call per paired call, in a chunk that happens to draw such a resample
    pooled = many["weighted_alphas"] - few["weighted_alphas"]
    assert 0 <= pooled <= many["paired_ordinal_alpha"], (few, many)
    assert {**few, "weighted_alphas": 0} == {**many, "weighted_alphas": 0}, (few, many)
    cells = job.cells_total
    # a handful of calls per cell (its point estimate, its resamples in one chunk, its
    # jackknife), where a loop over resamples would make 200 per cell
    # every cell of this study has the fitted machine side (2 of 6 clinicians per item), which
    # computes no z-scored machine ICC (its result would be replaced by the fitted one)
    assert set(many) == set(PER_RESAMPLE_WORK) - {"consistency_icc2"}, many
    assert many["resample_weights"] <= 3 * cells, (many, cells)
    assert many["connected_components"] == many["fit_from_weights"], many
    assert sum(many.values()) <= 20 * cells, (many, cells)
