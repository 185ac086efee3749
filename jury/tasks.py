"""Celery tasks of the jury: thin, idempotent wrappers around the execution service."""

from __future__ import annotations

import logging
from pathlib import Path

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from annotation.imports import run_import_job
from annotation.imports.after_import import items_imported, record_step_failure
from annotation.models import ImportJob, RatingStudy
from jury.execution import execute_call, execute_calls
from jury.execution.sweep import sweep_calls
from jury.helm_verdicts import HelmVerdictReport, import_helm_verdicts, import_suite_verdicts
from jury.metric_jobs import run_metric_job
from jury.metric_services import ALL_METRICS, compute_metrics
from jury.metrics import MetricUnavailable
from jury.providers.local_models import LocalModelMissing
from jury.score_imports import import_scores
from medhelm_site.common import task_names

logger = logging.getLogger(__name__)


@shared_task(name=task_names.RUN_SCORE_IMPORT, acks_late=True, ignore_result=True)
def run_score_import(job_id: int) -> dict[str, object]:
    """Run a queued import job of a scores file (annotation.imports.run_import_job with the
    jury's importer). Safe to deliver twice: a finished job is left as it is."""
    try:
        job = run_import_job(job_id=job_id, long_importers={ImportJob.Kind.SCORES: import_scores})
    except ImportJob.DoesNotExist:  # the study was deleted meanwhile
        return {"job": job_id, "status": "missing"}
    return {"job": job.pk, "status": job.status}


@shared_task(name=task_names.EXECUTE_CALL, acks_late=True, ignore_result=True)
def execute_judge_call(call_id: int) -> str:
    """Run one judge call. Safe to deliver twice: a finished call is left alone, a call
    another worker holds is waited for."""
    return execute_call(call_id=call_id)


@shared_task(name=task_names.EXECUTE_CALLS, acks_late=True, ignore_result=True)
def execute_judge_calls(call_ids: list[int]) -> dict[str, int]:
    """Run a chunk of judge calls (what start_run sends when the limits live in Redis).
    Safe to deliver twice, like execute_judge_call; a killed worker's chunk loses only the
    requests in flight, whose calls stay pending for a resume."""
    return execute_calls(call_ids=call_ids)


@shared_task(name=task_names.SWEEP_CALLS, ignore_result=True)
def sweep_judge_calls() -> dict[str, object]:
    """Celery beat runs this every JURY_SWEEP_INTERVAL_SECONDS: orphaned pending calls are
    sent again or ended, finished runs marked finished (jury.execution.sweep)."""
    report = sweep_calls()
    return {
        "finished_runs": report.finished_runs,
        "redispatched": report.redispatched,
        "failed": report.failed,
        "busy": report.busy,
    }


@shared_task(name=task_names.IMPORT_HELM_VERDICTS, bind=True, acks_late=True, max_retries=3)
def import_helm_verdicts_for_job(self, job_id: int) -> dict[str, object]:
    """After a HELM item import: import the run's jury verdicts (jury.helm_verdicts).

    Does nothing unless the ImportJob is a "helm" import whose items were imported. Safe to
    deliver twice or retry: an identical re-import changes nothing, and the import is one
    transaction. Reads the stored upload as the item import did (its bytes, named by the
    uploaded file), so that the external ids match. A lost database connection is retried.
    Verdicts that cannot be imported (a missing upload, errors, conflicts) mark the import
    job failed with the reason, where the coordinator sees it.
    """
    try:
        job = ImportJob.objects.select_related("study", "created_by").filter(pk=job_id).first()
        if job is None:
            return {"job": job_id, "status": "missing"}
        if job.file_format != "helm" or not items_imported(job):
            return {"job": job_id, "status": "skipped"}
        if job.runs_total:
            return _suite_verdicts(self.name, job)
        try:
            data = (Path(settings.MEDIA_ROOT) / job.source_path).read_bytes()
        except FileNotFoundError:
            reason = f"the uploaded file is missing from storage ({job.source_path})"
            record_step_failure(job_id=job_id, step=self.name, reason=reason)
            return {"job": job_id, "status": "missing file"}
        report = import_helm_verdicts(
            study=job.study,
            source=data,
            actor=job.created_by,
            name_hint=Path(job.source_name).stem,
        )
    except (OperationalError, InterfaceError) as exc:
        raise self.retry(exc=exc, countdown=10 * 2**self.request.retries) from exc
    if not report.ok:
        record_step_failure(job_id=job_id, step=self.name, reason=_not_imported(report))
    return {"job": job_id, "status": "imported" if report.ok else "failed", **report.as_dict()}


def _suite_verdicts(step: str, job: ImportJob) -> dict[str, object]:
    """The verdicts of every run of a suite whose items were imported; a run whose verdicts
    cannot be imported marks the job failed, naming the run (the other runs' verdicts stay)."""
    path = Path(settings.MEDIA_ROOT) / job.source_path
    if not path.is_file():
        reason = f"the uploaded file is missing from storage ({job.source_path})"
        record_step_failure(job_id=job.pk, step=step, reason=reason)
        return {"job": job.pk, "status": "missing file"}
    folders = [s["folder"] for s in job.run_summaries if s.get("status") == "imported"]
    reports = import_suite_verdicts(
        study=job.study, path=path, label=job.source_name, folders=folders, actor=job.created_by
    )
    failed = [(name, report) for name, report in reports if not report.ok]
    for name, report in failed:
        record_step_failure(job_id=job.pk, step=f"{step} ({name})", reason=_not_imported(report))
    return {
        "job": job.pk,
        "status": "failed" if failed else "imported",
        "runs": {name: report.as_dict() for name, report in reports},
    }


def _not_imported(report: HelmVerdictReport, shown: int = 5) -> str:
    problems = [*report.errors, *report.conflicts]
    listed = "; ".join(f"{p.where}: {p.reason}" for p in problems[:shown])
    more = f"; and {len(problems) - shown} more" if len(problems) > shown else ""
    return f"the run's jury verdicts were not imported (nothing of them was saved): {listed}{more}"


@shared_task(name=task_names.COMPUTE_METRICS, bind=True, acks_late=True, max_retries=3)
def compute_metrics_task(
    self,
    study_id: int,
    metrics: list[str] | None = None,
    item_ids: list[int] | None = None,
    job_id: int | None = None,
) -> dict[str, object]:
    """Score a study's items with the automatic metrics (jury.metric_services); with a
    `job_id`, as that job (jury.metric_jobs), which the pages show as it goes and ends.

    Safe to deliver twice or retry: items the scorer already scored are skipped, and each
    batch is written as it is scored, so a retry resumes where a lost worker stopped. A lost
    database connection is retried; a missing package or model is reported, not retried.
    """
    if job_id is not None:
        try:
            return run_metric_job(job_id)
        except (OperationalError, InterfaceError) as exc:  # the job stays active for the retry
            raise self.retry(exc=exc, countdown=10 * 2**self.request.retries) from exc
    study = RatingStudy.objects.filter(pk=study_id).first()
    if study is None:
        return {"study": study_id, "status": "missing"}
    try:
        report = compute_metrics(
            study=study, metrics=metrics or ALL_METRICS, actor=None, item_ids=item_ids
        )
    except (OperationalError, InterfaceError) as exc:
        raise self.retry(exc=exc, countdown=10 * 2**self.request.retries) from exc
    except (MetricUnavailable, LocalModelMissing) as exc:
        logger.error("metrics of study %s not computed: %s", study_id, exc)
        return {"study": study_id, "status": "unavailable", "error": str(exc)}
    return {"status": "done", **report.as_dict()}
