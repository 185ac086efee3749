"""The report's parts of bench/bench_reports.py run in a subprocess with the site's settings:
the report job timed as a worker runs it (its stages and renderings), and, for --reuse, the
newest stored report of a kept data folder."""

from __future__ import annotations

import cProfile
import io
import pstats
import time
from typing import Any
from unittest import mock

from _support import django_setup

from reportbench.seeding import session_for


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
    profiler = cProfile.Profile() if params.get("profile") else None
    t0 = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    job = jobs.run_report_job(job.pk)
    if profiler is not None:
        profiler.disable()
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
        "profile": profile_text(profiler, params.get("profile") or 0),
    }


def profile_text(profiler: cProfile.Profile | None, top: int) -> str:
    """The profile's ``top`` entries by own time and by cumulative time ("" without one)."""
    if profiler is None:
        return ""
    out = io.StringIO()
    for order in ("tottime", "cumulative"):
        stats = pstats.Stats(profiler, stream=out)
        stats.strip_dirs().sort_stats(order).print_stats(top)
    return out.getvalue()


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
    return {"session": session_for(coordinator), "urls": urls}
