"""The steps after a succeeded import: each runs, or the job is marked failed where the
coordinator sees it (job.status and job.errors, shown on the import page).

The steps are the Celery tasks named in settings.MEDHELM_AFTER_IMPORT_TASKS, each given the
job id and run by name, so that annotation never imports the apps that provide them (the
jury's HELM verdict import). An inline import runs them in this process, one after the
other; a queued import's worker sends the first, and each sent step is followed, whether it
succeeds or fails, by AFTER_IMPORT_NEXT_TASK, which sends the next; a failure is recorded by
an errback (AFTER_IMPORT_FAILED_TASK). A step that fails in its own terms (a verdict
conflict) records it itself with record_step_failure. The items a failed step follows stay
imported. The steps may read the uploaded file, so it is deleted after the last of them
(uploads.release_upload).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from celery import Task, current_app
from celery.canvas import Signature
from django.conf import settings
from django.db import transaction

from annotation.imports.uploads import release_upload
from annotation.models import ImportJob
from medhelm_site.common import task_names

logger = logging.getLogger(__name__)

AFTER_IMPORT_FAILED_TASK = task_names.AFTER_IMPORT_FAILED
AFTER_IMPORT_NEXT_TASK = task_names.AFTER_IMPORT_NEXT
WHERE_PREFIX = "after import: "
UNKNOWN_STEP = "no task of this name is known"
MAX_REASON = 1000


def run_after_import_steps(*, job_id: int, inline: bool) -> None:
    """Run (inline) or send (queued import, from its worker) every step after job `job_id`;
    its upload is deleted after the last."""
    steps = list(settings.MEDHELM_AFTER_IMPORT_TASKS)
    if not inline:
        send_steps(job_id=job_id, steps=steps)
        return
    for name in steps:
        task = _step_task(name, job_id)
        if task is not None:
            _run_in_process(task, job_id)
    release_upload(job_id=job_id)


def send_steps(*, job_id: int, steps: Sequence[str]) -> None:
    """Send the first of `steps` that can be sent, to be followed by the rest once it has
    ended, well or not; when none is left, delete the job's upload. A step that cannot be
    looked up or sent is recorded as failed, and the next one is tried."""
    remaining = list(steps)
    while remaining:
        name, remaining = remaining[0], remaining[1:]
        if _step_task(name, job_id) is not None and _send(name, job_id, then=remaining):
            return
    release_upload(job_id=job_id)


def _step_task(name: str, job_id: int) -> Task | None:
    """The task of step `name`, or None after recording why there is none."""
    try:
        task = _registered(name)
    except Exception as exc:  # an app's tasks module that does not import
        logger.exception("could not look up after-import step %s", name)
        record_step_failure(job_id=job_id, step=name, reason=failure_reason(exc))
        return None
    if task is None:
        # A worker drops a message for a task it does not know without calling errbacks:
        # an unknown name is caught here, in a process that knows every app's tasks.
        record_step_failure(job_id=job_id, step=name, reason=UNKNOWN_STEP)
    return task


def _registered(name: str) -> Task | None:
    """The task called `name`, after importing every installed app's tasks module as a worker
    does at its start (a web process imports them only on demand)."""
    if name not in current_app.tasks:
        current_app.autodiscover_tasks(force=True)
    return current_app.tasks.get(name)


def _run_in_process(task: Task, job_id: int) -> None:
    try:
        result = task.apply(args=[job_id], throw=False)
        failure = result.result if result.failed() else None
    except Exception as exc:
        failure = exc
    if failure is not None:
        logger.error("after-import step %s of job %s failed: %r", task.name, job_id, failure)
        record_step_failure(job_id=job_id, step=task.name, reason=failure_reason(failure))


def _send(name: str, job_id: int, *, then: list[str]) -> bool:
    """Send step `name`, followed by the steps `then` whether it succeeds (link) or fails
    (errbacks: record the failure, then go on); False after recording why it could not be
    sent."""
    following = _signature(AFTER_IMPORT_NEXT_TASK, job_id, then)
    try:
        current_app.send_task(
            name,
            args=[job_id],
            link=following,
            link_error=[
                current_app.signature(AFTER_IMPORT_FAILED_TASK, args=[job_id, name]),
                following,
            ],
        )
    except Exception as exc:
        logger.exception("could not send after-import step %s of job %s", name, job_id)
        record_step_failure(
            job_id=job_id, step=name, reason=f"could not be sent to a worker: {failure_reason(exc)}"
        )
        return False
    return True


def _signature(name: str, *args: object) -> Signature:
    """An immutable signature: Celery passes a link the step's result and an errback the
    failed request, neither of which AFTER_IMPORT_NEXT_TASK takes."""
    return current_app.signature(name, args=list(args), immutable=True)


def failure_reason(exc: BaseException | object) -> str:
    """What the import page shows of an exception: its type and message, shortened."""
    if isinstance(exc, BaseException):
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    else:
        text = str(exc)
    return text[:MAX_REASON]


def record_step_failure(*, job_id: int, step: str, reason: str) -> None:
    """Mark job `job_id` failed because the step after it called `step` failed, and say why
    in its errors (first, before the import's warnings). Its items stay imported. Recording
    the same failure twice (a redelivered errback) changes nothing."""
    entry = {"where": WHERE_PREFIX + step, "reason": reason[:MAX_REASON], "step": step}
    with transaction.atomic():
        job = ImportJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            return  # the study (and its jobs) was deleted meanwhile
        errors = list(job.errors or [])
        if entry in errors:
            return
        job.errors = [entry, *errors]
        job.status = ImportJob.Status.FAILED
        job.save(update_fields=["status", "errors"])
    logger.error("import job %s: step %s failed: %s", job_id, step, reason)


def items_imported(job: ImportJob) -> bool:
    """Whether the job's items were saved: it succeeded, or only a step after it failed."""
    if job.status == ImportJob.Status.SUCCEEDED:
        return True
    return job.status == ImportJob.Status.FAILED and any(
        "step" in entry for entry in job.errors or []
    )
