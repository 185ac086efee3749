"""Celery tasks of the agreement app."""

from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError

from agreement.services.jobs import COMPUTE_REPORT_TASK, run_report_job


@shared_task(name=COMPUTE_REPORT_TASK, bind=True, acks_late=True, max_retries=3)
def compute_report(self, job_id: int) -> dict[str, object]:
    """Compute a queued report (agreement.services.jobs). Safe to deliver twice: an ended job
    is left as it is. A lost database connection is retried; the job starts again."""
    try:
        job = run_report_job(job_id)
    except (OperationalError, InterfaceError) as exc:
        raise self.retry(exc=exc, countdown=10 * 2**self.request.retries) from exc
    return {"job": job_id, "status": job.status, "snapshot": job.snapshot_id}
