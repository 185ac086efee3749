"""Celery tasks of the agreement app."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from celery.exceptions import Ignore
from django.db import InterfaceError, OperationalError

from agreement.services.jobs import COMPUTE_REPORT_TASK, run_report_job
from agreement.services.simulations import (
    SIMULATE_DESIGN_TASK,
    SIMULATION_HARD_TIME_LIMIT_SECONDS,
    SIMULATION_TIME_LIMIT_SECONDS,
    run_queued_simulation,
)
from agreement.services.watch import REFRESH_WATCH_TASK, refresh_watch
from agreement.stats.planning_sim import DesignSpec


@shared_task(name=COMPUTE_REPORT_TASK, bind=True, acks_late=True, max_retries=3)
def compute_report(self, job_id: int) -> dict[str, object]:
    """Compute a queued report (agreement.services.jobs). Safe to deliver twice: an ended job
    is left as it is. A lost database connection is retried; the job starts again."""
    try:
        job = run_report_job(job_id)
    except (OperationalError, InterfaceError) as exc:
        raise self.retry(exc=exc, countdown=10 * 2**self.request.retries) from exc
    return {"job": job_id, "status": job.status, "snapshot": job.snapshot_id}


@shared_task(
    name=SIMULATE_DESIGN_TASK,
    bind=True,
    soft_time_limit=SIMULATION_TIME_LIMIT_SECONDS,
    time_limit=SIMULATION_HARD_TIME_LIMIT_SECONDS,
    # A simulation whose worker died (or was terminated by a cancel) is not delivered again:
    # its user sees it failed and may run it again, rather than a loop of heavy retries.
    reject_on_worker_lost=False,
)
def simulate_design_task(self, study_id: int, spec: dict[str, Any]) -> dict[str, Any]:
    """Simulate a planned design (agreement.services.simulations), reporting progress as the
    PROGRESS state with done/total. Pure computation on its arguments: safe to run twice. A
    simulation cancelled, reported lost or never queued as one is not run (IGNORED)."""

    def progress(done: int, total: int) -> None:
        self.update_state(
            state="PROGRESS", meta={"study_id": study_id, "done": done, "total": total}
        )

    result = run_queued_simulation(
        task_id=self.request.id, study_id=study_id, spec=DesignSpec(**spec), progress=progress
    )
    if result is None:
        raise Ignore()
    return result


@shared_task(name=REFRESH_WATCH_TASK, acks_late=True)
def refresh_watch_task(study_id: int) -> dict[str, object]:
    """Refresh a study's agreement watch (agreement.services.watch): sent by the rating
    service, debounced. Safe to run twice: it recomputes from the ratings as they are."""
    return refresh_watch(study_id=study_id)
