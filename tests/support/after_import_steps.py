"""A step after an import that always fails, for the tests of what such a failure shows."""

from __future__ import annotations

from celery import shared_task

FAILING_STEP = "tests.failing_after_import"


@shared_task(name=FAILING_STEP)
def failing_after_import(job_id: int) -> None:
    raise RuntimeError(f"the step broke on job {job_id}")
