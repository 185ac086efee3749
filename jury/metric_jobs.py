"""Computing a study's automatic metrics in a worker, as a job the pages can see: started
from the report page (coordinators), the demo or the API; queued, running, done with its
counts, or failed with its reason. A job nobody picks up says so after a while, instead of
leaving the page at "0 metrics"."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from celery import current_app
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from annotation import audit
from annotation.models import Item, RatingStudy
from jury.errors import JuryError
from jury.metric_services import ALL_METRICS, compute_metrics, metric_names
from jury.metrics import MetricUnavailable
from jury.models import MetricJob, MetricScore
from jury.providers.local_models import LocalModelMissing
from medhelm_site.common import task_names

log = logging.getLogger(__name__)

#: A job still queued after this long: no worker serving the metrics queue has taken it.
STALE_QUEUED = timedelta(minutes=10)
#: A job running this long with no end recorded: its worker most likely stopped (BERTScore
#: over a MedHELM-sized study takes well under an hour on 2 cores).
STALE_RUNNING = timedelta(hours=2)
ACTIVE = (MetricJob.Status.QUEUED, MetricJob.Status.RUNNING)
LABELS = dict(MetricScore.Metric.choices)


def start_metric_job(
    *,
    study: RatingStudy,
    actor: AbstractBaseUser | None,
    metrics: Sequence[str] = ALL_METRICS,
    params: dict[str, Any] | None = None,
) -> MetricJob:
    """Queue the computation of `metrics` over the study's items; the task is sent once the
    transaction commits. Refused while a job for one of these metrics is still queued or
    running (a second would only score the same items twice)."""
    names = metric_names(metrics)
    with transaction.atomic():
        RatingStudy.objects.select_for_update().filter(pk=study.pk).first()
        for job in MetricJob.objects.filter(study=study, status__in=ACTIVE):
            overlap = [m for m in names if m in job.metrics]
            if overlap and is_stale(job, now=timezone.now()):
                # Nobody is computing it: end it visibly, and let the new job do the work
                # (a late worker would only skip the items already scored).
                MetricJob.objects.filter(pk=job.pk).update(
                    status=MetricJob.Status.FAILED,
                    finished_at=timezone.now(),
                    error=f"{job.get_status_display().lower()} since {_when(job.created_at)} "
                    "with no end recorded; started again",
                )
            elif overlap:
                raise JuryError(
                    f"{', '.join(LABELS.get(m, m) for m in overlap)} already "
                    f"{job.get_status_display().lower()} since {_when(job.created_at)}",
                    field="metrics",
                )
        job = MetricJob.objects.create(
            study=study, metrics=names, params=params or {}, created_by=_user(actor)
        )
        audit.record(
            actor=actor,
            action="metrics.start",
            target=study,
            study=study,
            before=None,
            after={"job": job.pk, "metrics": names},
        )
        transaction.on_commit(
            lambda: current_app.send_task(
                task_names.COMPUTE_METRICS, args=[study.pk, names, None], kwargs={"job_id": job.pk}
            )
        )
    return job


def run_metric_job(job_id: int) -> dict[str, Any]:
    """The worker's side: mark the job running, compute, and end it done (with its counts)
    or failed (with the reason). An unexpected error also fails the job, then propagates to
    be logged with its traceback."""
    updated = MetricJob.objects.filter(pk=job_id, status__in=ACTIVE).update(
        status=MetricJob.Status.RUNNING, started_at=timezone.now()
    )
    job = MetricJob.objects.select_related("study", "created_by").filter(pk=job_id).first()
    if job is None or not updated:
        return {"job": job_id, "status": job.status if job else "missing"}
    try:
        report = compute_metrics(
            study=job.study,
            metrics=job.metrics,
            actor=job.created_by,
            model_dir=job.params.get("model_dir"),
        )
    except (MetricUnavailable, LocalModelMissing) as exc:
        _end(job, status=MetricJob.Status.FAILED, error=str(exc))
        log.error("metric job %s of study %s failed: %s", job.pk, job.study_id, exc)
        return {"job": job.pk, "status": "failed", "error": str(exc)}
    except Exception as exc:
        _end(job, status=MetricJob.Status.FAILED, error=f"{type(exc).__name__}: {exc}")
        raise
    counts = report.as_dict()
    _end(job, status=MetricJob.Status.DONE, counts=counts)
    return {"job": job.pk, "status": "done", **counts}


def _end(job: MetricJob, *, status: str, error: str = "", counts: dict | None = None) -> None:
    MetricJob.objects.filter(pk=job.pk).update(
        status=status, error=error[:2000], counts=counts or {}, finished_at=timezone.now()
    )


@dataclass(frozen=True)
class MetricState:
    """Where one of the site's own metrics stands for a study: items scored of those with a
    reference, and its latest job (None: never started from the site)."""

    metric: str
    label: str
    done: int
    total: int
    job_status: str | None
    job_when: str
    job_error: str
    stale: bool

    @property
    def startable(self) -> bool:
        """Worth starting: items left to score and no live job queued or running for it."""
        return self.done < self.total and (self.job_status not in ACTIVE or self.stale)

    @property
    def summary(self) -> str:
        if self.job_status is None:
            return "never started" if self.done == 0 else "computed outside the site"
        if self.job_status == MetricJob.Status.QUEUED and self.stale:
            return (
                f"queued since {self.job_when} and not taken by any worker: is a worker "
                "serving the metrics queue running?"
            )
        if self.job_status == MetricJob.Status.RUNNING and self.stale:
            return (
                f"running since {self.job_when} with no end recorded: its worker may have "
                "stopped; start it again"
            )
        if self.job_status == MetricJob.Status.FAILED:
            return f"failed {self.job_when}: {self.job_error}"
        return f"{LABELS_STATUS[self.job_status]} {self.job_when}"


LABELS_STATUS = {
    MetricJob.Status.QUEUED: "queued since",
    MetricJob.Status.RUNNING: "running since",
    MetricJob.Status.DONE: "done",
}


def metric_states(*, study: RatingStudy, now: datetime | None = None) -> list[MetricState]:
    """Each of the site's own metrics for `study`, with its latest job. Three queries."""
    now = now or timezone.now()
    total = Item.objects.filter(study=study).exclude(reference_text="").count()
    done = dict(
        MetricScore.objects.filter(item__study=study, metric__in=ALL_METRICS)
        .values("metric")
        .annotate(n=Count("item", distinct=True))
        .values_list("metric", "n")
    )
    latest: dict[str, MetricJob] = {}
    for job in MetricJob.objects.filter(study=study).order_by("-created_at", "-pk")[:50]:
        for metric in job.metrics:
            latest.setdefault(metric, job)
    states = []
    for metric in ALL_METRICS:
        job = latest.get(metric)
        when = job.started_at if job and job.status == MetricJob.Status.RUNNING else None
        when = when or (job.finished_at if job and job.finished_at else None)
        when = when or (job.created_at if job else None)
        states.append(
            MetricState(
                metric=metric,
                label=LABELS.get(metric, metric),
                done=done.get(metric, 0),
                total=total,
                job_status=job.status if job else None,
                job_when=_when(when) if when else "",
                job_error=job.error if job else "",
                stale=job is not None and is_stale(job, now=now),
            )
        )
    return states


def is_stale(job: MetricJob, *, now: datetime) -> bool:
    """Queued with no worker taking it, or running with no end, for longer than a job takes."""
    if job.status == MetricJob.Status.QUEUED:
        return now - job.created_at > STALE_QUEUED
    if job.status == MetricJob.Status.RUNNING:
        return now - (job.started_at or job.created_at) > STALE_RUNNING
    return False


def metric_panel(*, study: RatingStudy) -> dict[str, Any]:
    """What jury/_metric_states.html shows: the states and the metrics worth starting."""
    states = metric_states(study=study)
    return {"metric_states": states, "metrics_to_start": [s for s in states if s.startable]}


def _when(moment: datetime) -> str:
    local = timezone.localtime(moment)
    return local.strftime("%Y-%m-%d %H:%M ") + (local.tzname() or "")


def _user(actor: AbstractBaseUser | None) -> Any:
    return actor if actor is not None and actor.is_authenticated else None
