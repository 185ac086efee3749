"""Computing a report in the background: a ReportJob is asked for (parameters checked and
the seed drawn at once), a Celery worker computes it (agreement.tasks), writing its stage and
the bootstrapped cells as it goes, and it ends with its snapshot or with the reason it failed.
A job whose worker stopped writing progress is failed with that reason, never left running.
`manage.py agreement_report` still computes in the foreground (create_snapshot)."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone

from agreement.errors import AgreementError
from agreement.models import ReportJob, ReportSnapshot
from agreement.processes import start_fork_server
from agreement.services.parameters import DEFAULT_PARAMETERS, normalise_parameters
from agreement.services.renderings import store_renderings
from agreement.services.snapshots import create_snapshot
from annotation import audit
from annotation.models import RatingStudy
from medhelm_site.common import task_names

logger = logging.getLogger(__name__)

COMPUTE_REPORT_TASK = task_names.COMPUTE_REPORT
#: Progress is written at most this often (seconds), and always at a stage's change.
PROGRESS_EVERY_SECONDS = 1.0
STAGE_QUEUED = "waiting for a worker"
STAGE_SAVING = "saving the report and its files"


def stale_after() -> timedelta:
    """A running job with no progress for this long has lost its worker."""
    return timedelta(seconds=getattr(settings, "AGREEMENT_REPORT_STALE_SECONDS", 600))


def _default_title() -> str:
    return f"Agreement report, {timezone.localtime():%Y-%m-%d %H:%M}"


def request_report(
    *,
    study: RatingStudy,
    actor: AbstractBaseUser | None,
    parameters: Mapping[str, Any],
    previous: ReportSnapshot | None = None,
    background: bool | None = None,
) -> ReportJob:
    """Queue a report for a worker (``background``, by default settings.
    AGREEMENT_REPORTS_IN_BACKGROUND), or compute it here and return the ended job. Raises
    ParameterErrors (an AgreementError) at once for parameters out of range; the seed is
    drawn now, so that the job always computes the same report."""
    if background is None:
        background = settings.AGREEMENT_REPORTS_IN_BACKGROUND
    params = normalise_parameters(parameters)
    title = params.get("title") or _default_title()
    params["title"] = title
    with transaction.atomic():
        job = ReportJob.objects.create(
            study=study,
            title=title,
            parameters=params,
            previous=previous,
            stage=STAGE_QUEUED,
            created_by=actor if actor is not None and actor.is_authenticated else None,
        )
        audit.record(
            actor=actor,
            action="report.request",
            target=job,
            study=study,
            after={"title": title, "parameters": params, "previous": getattr(previous, "pk", None)},
        )
        if background:
            transaction.on_commit(functools.partial(queue_report_job, job.pk))
    if background:
        return job
    return run_report_job(job.pk)


def request_recomputation(
    *, snapshot: ReportSnapshot, actor: AbstractBaseUser | None, background: bool | None = None
) -> ReportJob:
    """A job for a new snapshot of the same study with the same parameters (and seed) on
    today's scores, compared with ``snapshot``."""
    base = snapshot.title.split(" (recomputed")[0]
    parameters = {
        **{k: v for k, v in snapshot.parameters.items() if k in {*DEFAULT_PARAMETERS, "seed"}},
        "title": f"{base} (recomputed {timezone.localtime():%Y-%m-%d %H:%M})",
    }
    return request_report(
        study=snapshot.study,
        actor=actor,
        parameters=parameters,
        previous=snapshot,
        background=background,
    )


def queue_report_job(job_id: int) -> None:
    """Send a committed job to a worker; if the broker refuses it, the job fails with the
    reason rather than stay "queued" forever."""
    try:
        current_app.send_task(COMPUTE_REPORT_TASK, args=[job_id])
    except Exception as exc:
        logger.exception("could not queue report job %s", job_id)
        ReportJob.objects.filter(pk=job_id, status=ReportJob.Status.QUEUED).update(
            status=ReportJob.Status.FAILED,
            error=f"could not send the job to a worker: {exc}",
            finished_at=timezone.now(),
        )


def _claim(job_id: int) -> tuple[ReportJob, bool]:
    """Lock the job and mark it running; (job, False) when it has ended already. A job left
    running by a worker that died starts again (nothing of it was saved)."""
    with transaction.atomic():
        job = ReportJob.objects.select_for_update().get(pk=job_id)
        if job.status in (ReportJob.Status.FINISHED, ReportJob.Status.FAILED):
            return job, False
        now = timezone.now()
        job.status = ReportJob.Status.RUNNING
        job.started_at = job.heartbeat_at = now
        job.cells_done = job.cells_total = 0
        job.stage = "starting"
        job.error = ""
        job.save()
        return job, True


class _ProgressWriter:
    """Writes a job's stage and cells at most once a second (and at every change of stage),
    as the heartbeat that tells a live worker from a dead one."""

    def __init__(self, job: ReportJob) -> None:
        self.job = job
        self.last_written = 0.0
        self.stage = ""
        self.done = self.total = 0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if total:  # a stage without cells of its own keeps the count of the cells so far
            self.done, self.total = done, total
        now = time.monotonic()
        if stage == self.stage and now - self.last_written < PROGRESS_EVERY_SECONDS:
            return
        self.stage, self.last_written = stage, now
        ReportJob.objects.filter(pk=self.job.pk, status=ReportJob.Status.RUNNING).update(
            stage=stage[:200],
            cells_done=self.done,
            cells_total=self.total,
            heartbeat_at=timezone.now(),
        )


def run_report_job(job_id: int) -> ReportJob:
    """Compute one job to its end. Idempotent: an ended job is returned as it is. A
    parameter or data problem (AgreementError) fails the job with its message; any other
    exception fails it with the error's type and message and is re-raised (logged)."""
    job, claimed = _claim(job_id)
    if not claimed:
        return job
    progress = _ProgressWriter(job)
    # the processes the rows and figure files will be computed in start loading their imports
    # while the scores are read
    start_fork_server(settings.AGREEMENT_REPORT_PROCESSES)
    try:
        snapshot = create_snapshot(
            study=job.study,
            actor=job.created_by,
            parameters=job.parameters,
            previous=job.previous,
            progress=progress,
        )
        progress(STAGE_SAVING, 0, 0)
        store_renderings(snapshot)
    except AgreementError as exc:
        return _fail(job, f"the report could not be computed: {exc}")
    except (OperationalError, InterfaceError):
        raise  # the database went away: left running, the task retries and starts it again
    except Exception as exc:
        _fail(job, f"unexpected error while computing: {type(exc).__name__}: {exc}")
        raise
    ReportJob.objects.filter(pk=job.pk).update(
        status=ReportJob.Status.FINISHED,
        snapshot=snapshot,
        stage="done",
        finished_at=timezone.now(),
        heartbeat_at=timezone.now(),
    )
    job.refresh_from_db()
    return job


def _fail(job: ReportJob, reason: str) -> ReportJob:
    ReportJob.objects.filter(pk=job.pk).update(
        status=ReportJob.Status.FAILED, error=reason, finished_at=timezone.now()
    )
    job.refresh_from_db()
    return job


def fail_stale_jobs(*, study: RatingStudy | None = None) -> int:
    """Fail running jobs whose worker stopped writing progress (killed, out of memory), with
    the reason; returns how many. Run by the pages and the API before they show jobs."""
    cutoff = timezone.now() - stale_after()
    stale = ReportJob.objects.filter(status=ReportJob.Status.RUNNING, heartbeat_at__lt=cutoff)
    if study is not None:
        stale = stale.filter(study=study)
    failed = 0
    for job in stale:
        last = timezone.localtime(job.heartbeat_at)
        failed += ReportJob.objects.filter(
            pk=job.pk, status=ReportJob.Status.RUNNING, heartbeat_at=job.heartbeat_at
        ).update(
            status=ReportJob.Status.FAILED,
            error=(
                f"the worker computing it stopped answering (last progress {last:%Y-%m-%d %H:%M:%S}"
                f", at '{job.stage}'); nothing was saved: compute the report again"
            ),
            finished_at=timezone.now(),
        )
    return failed
