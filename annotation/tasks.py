"""Celery tasks of the annotation app: thin wrappers around services."""

from __future__ import annotations

import socket
from typing import Any

from celery import shared_task
from django.db import DatabaseError, InterfaceError, OperationalError

from annotation import services
from annotation.imports import run_import_job
from annotation.imports.after_import import (
    AFTER_IMPORT_FAILED_TASK,
    AFTER_IMPORT_NEXT_TASK,
    failure_reason,
    record_step_failure,
    send_steps,
)
from annotation.imports.jobs import RUN_IMPORT_TASK
from annotation.models import ImportJob, RatingStudy
from medhelm_site.common import task_names


@shared_task(name=task_names.WORKER_HEALTH)
def worker_health() -> dict[str, object]:
    """Prove that a worker runs and reaches the database (used by health checks and tests)."""
    return {"host": socket.gethostname(), "studies": RatingStudy.objects.count()}


@shared_task(name=RUN_IMPORT_TASK, bind=True, acks_late=True, max_retries=3, ignore_result=True)
def run_import(self, job_id: int) -> dict[str, object]:
    """Run one import job (annotation.imports.run_import_job): items, or a ratings file.

    Safe to deliver twice: a finished job is left as it is, and a job a dead worker left
    "running" starts again (nothing of it was saved). The job row holds the outcome, so no
    result is stored. A database error is retried only while the job is still unfinished,
    i.e. when its failure could not even be recorded; a recorded failure stays failed.
    """
    try:
        job = run_import_job(
            job_id=job_id, long_importers={ImportJob.Kind.RATINGS: services.import_ratings}
        )
    except ImportJob.DoesNotExist:
        # The study (and its jobs) was deleted before the worker got here.
        return {"job": job_id, "status": "missing"}
    except (OperationalError, InterfaceError) as exc:
        try:
            status = ImportJob.objects.filter(pk=job_id).values_list("status", flat=True).first()
        except DatabaseError:
            status = None
        if status in (None, ImportJob.Status.QUEUED, ImportJob.Status.RUNNING):
            raise self.retry(exc=exc, countdown=10 * 2**self.request.retries) from exc
        raise
    return {"job": job.pk, "status": job.status}


@shared_task(name=AFTER_IMPORT_FAILED_TASK)
def after_import_failed(
    request: Any, exc: BaseException, traceback: Any, job_id: int, step: str
) -> None:
    """Errback of a step after an import (annotation.imports.after_import): the step failed in
    the worker, so the job is marked failed with the reason. Celery calls it with the failed
    task's request, exception and traceback before the arguments it was sent with."""
    record_step_failure(job_id=job_id, step=step, reason=failure_reason(exc))


@shared_task(name=AFTER_IMPORT_NEXT_TASK)
def after_import_next(job_id: int, steps: list[str]) -> None:
    """Link and errback of a step after an import (annotation.imports.after_import): send
    the next of `steps`, or, when none is left, delete the job's upload. Sent as an
    immutable signature, so Celery calls it with these arguments only (as a task after a
    success, in the worker's process after a failure)."""
    send_steps(job_id=job_id, steps=steps)
