"""Design simulations queued for a Celery worker, on their own "planning" queue (settings.
CELERY_TASK_ROUTES), so that they never hold up the imports and reports of the default queue.

Each is a PlanningSimulation row: the study and the user it belongs to, and the one slot each
user has for a simulation waiting or running, freed when it ends, fails, times out, is lost
or is cancelled. Its task id is read back only within that study, in every state; the result
itself stays in Celery's result backend. The size of a simulation is bounded by the planner
(agreement.stats.planning_sim.MAX_STUDIES_ITEMS_RATERS) and its time by the task's limits."""

from __future__ import annotations

import functools
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

from celery import current_app
from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded
from celery.result import AsyncResult
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from agreement.errors import AgreementError
from agreement.models import PlanningSimulation
from agreement.services.planning import PROGRESS_EVERY_STUDIES, run_simulation
from agreement.stats.planning_sim import DesignSpec
from annotation import audit
from annotation.models import RatingStudy
from medhelm_site.common import task_names

logger = logging.getLogger(__name__)

SIMULATE_DESIGN_TASK = task_names.SIMULATE_DESIGN
#: The task's soft time limit: past it the simulation stops and reads as failed. The largest
#: simulation the planner allows takes well under it (bench/README.md, bench_plan.py); the
#: hard limit ends a worker process that did not stop.
SIMULATION_TIME_LIMIT_SECONDS = 300
SIMULATION_HARD_TIME_LIMIT_SECONDS = SIMULATION_TIME_LIMIT_SECONDS + 30
#: A queued simulation no worker has started after this many seconds is reported as lost:
#: longer than two simulations at their time limit, so that one waiting behind others on a
#: busy planning worker is not.
WAITING_TOO_LONG_SECONDS = 900
#: A running simulation looks at most this often whether it was cancelled (a database read).
CANCEL_CHECK_SECONDS = 1.0


class SimulationBusy(AgreementError):
    """The user has a simulation waiting or running already (``running``): one at a time."""

    def __init__(self, running: PlanningSimulation) -> None:
        self.running = running
        super().__init__(
            "You already have a simulation waiting or running: let it end, or cancel it, "
            "before you start another."
        )


class _Cancelled(Exception):
    """Raised inside a running simulation whose row has ended (cancelled, or reported lost)."""


def timed_out_reason(seconds: int = SIMULATION_TIME_LIMIT_SECONDS) -> str:
    return f"took longer than {seconds} s"


def _failure_reason(exc: object) -> str:
    if isinstance(exc, (SoftTimeLimitExceeded, TimeLimitExceeded)):
        return timed_out_reason()
    return f"{type(exc).__name__}: {exc}"


def _end(task_id: str, outcome: str, reason: str = "") -> bool:
    """End an open simulation (frees its user's slot); False when it had ended already."""
    return bool(
        PlanningSimulation.objects.filter(task_id=task_id, ended_at__isnull=True).update(
            ended_at=timezone.now(), outcome=outcome, reason=reason
        )
    )


def _ended_by_now(record: PlanningSimulation) -> tuple[str, str] | None:
    """(outcome, reason) of an open simulation that has in fact ended without saying so: its
    task ended in Celery (a hard time limit or a lost worker end it there only), or no worker
    took it in time; None while it may still be waiting or running."""
    state = AsyncResult(record.task_id, app=current_app)
    if state.state == "SUCCESS":
        return PlanningSimulation.Outcome.FINISHED, ""
    if state.state == "FAILURE":
        return PlanningSimulation.Outcome.FAILED, _failure_reason(state.result)
    if state.state == "REVOKED":
        return PlanningSimulation.Outcome.CANCELLED, "revoked"
    waited = (timezone.now() - record.created_at).total_seconds()
    if record.started_at is None and state.state == "PENDING":
        if waited > WAITING_TOO_LONG_SECONDS:
            return PlanningSimulation.Outcome.LOST, _lost_reason(waited)
        return None
    ran = (timezone.now() - (record.started_at or record.created_at)).total_seconds()
    if ran > SIMULATION_HARD_TIME_LIMIT_SECONDS + WAITING_TOO_LONG_SECONDS:
        return PlanningSimulation.Outcome.LOST, "its worker stopped without a result"
    return None


def _lost_reason(waited: float) -> str:
    return (
        f"no worker has started it in {waited / 60:.0f} minutes: is a Celery worker running "
        "on the planning queue? Run the simulation again once one is."
    )


def start_simulation(
    *,
    study: RatingStudy,
    actor: AbstractBaseUser,
    spec: DesignSpec,
    background: bool | None = None,
) -> tuple[PlanningSimulation | None, dict[str, Any] | None]:
    """Queue the simulation for a worker (its row, None) or run it here (None, result).

    A queued one takes the actor's one slot: raises SimulationBusy while their previous one
    waits or runs (one that has ended in Celery without saying so is closed first)."""
    if background is None:
        background = settings.AGREEMENT_REPORTS_IN_BACKGROUND
    if not background:
        return None, run_simulation(spec, study_id=study.pk)
    with transaction.atomic():
        for open_one in PlanningSimulation.objects.select_for_update().filter(
            requested_by=actor, ended_at__isnull=True
        ):
            ended = _ended_by_now(open_one)
            if ended is None:
                raise SimulationBusy(open_one)
            _end(open_one.task_id, *ended)
        try:
            with transaction.atomic():
                record = PlanningSimulation.objects.create(
                    task_id=str(uuid.uuid4()),
                    study=study,
                    requested_by=actor,
                    spec=spec.__dict__.copy(),
                )
        except IntegrityError:  # a second request of the same user at the same moment
            raise SimulationBusy(
                PlanningSimulation.objects.get(requested_by=actor, ended_at__isnull=True)
            ) from None
        audit.record(
            actor=actor, action="plan.simulate", target=record, study=study, after=record.spec
        )
        transaction.on_commit(functools.partial(_send, record.pk))
    return record, None


def _send(record_id: int) -> None:
    """Send a committed simulation to a worker; if the broker refuses it, it fails with the
    reason (and frees the slot) rather than wait forever."""
    record = PlanningSimulation.objects.get(pk=record_id)
    try:
        current_app.send_task(
            SIMULATE_DESIGN_TASK,
            kwargs={"study_id": record.study_id, "spec": record.spec},
            task_id=record.task_id,
        )
    except Exception as exc:
        logger.exception("could not queue simulation %s", record.task_id)
        _end(
            record.task_id,
            PlanningSimulation.Outcome.FAILED,
            f"could not send the simulation to a worker: {exc}",
        )


class _CancelCheck:
    """Reads at most every CANCEL_CHECK_SECONDS whether the simulation's row has ended."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.last = time.monotonic()

    def __call__(self) -> None:
        if time.monotonic() - self.last < CANCEL_CHECK_SECONDS:
            return
        self.last = time.monotonic()
        if PlanningSimulation.objects.filter(task_id=self.task_id, ended_at__isnull=False).exists():
            raise _Cancelled


def run_queued_simulation(
    *,
    task_id: str,
    study_id: int,
    spec: DesignSpec,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any] | None:
    """Run a queued simulation in the worker: its result, or None when it is not to run (no
    open row for this task and study: cancelled, reported lost, or never queued here). A
    cancellation seen while it runs stops it; its end frees its user's slot whatever it is."""
    claimed = PlanningSimulation.objects.filter(
        task_id=task_id, study_id=study_id, ended_at__isnull=True
    ).update(started_at=timezone.now())
    if not claimed:
        return None
    cancelled = _CancelCheck(task_id)

    def step(done: int, total: int) -> None:
        cancelled()
        if progress is not None and (done % PROGRESS_EVERY_STUDIES == 0 or done == total):
            progress(done, total)

    try:
        out = run_simulation(spec, study_id=study_id, progress=step, progress_every=1)
    except _Cancelled:
        return None
    except Exception as exc:
        _end(task_id, PlanningSimulation.Outcome.FAILED, _failure_reason(exc))
        raise
    _end(task_id, PlanningSimulation.Outcome.FINISHED)
    return out


def simulation_for_study(*, study: RatingStudy, task_id: str) -> PlanningSimulation | None:
    return PlanningSimulation.objects.filter(study=study, task_id=task_id).first()


def cancel_simulation(*, record: PlanningSimulation, actor: AbstractBaseUser) -> None:
    """Cancel a waiting or running simulation: its row ends (the page says cancelled, the
    slot is free) and the task is revoked, its process terminated if it runs. A worker that
    cannot hear the revoke (the embedded broker has no broadcast) stops at its next check.
    Raises AgreementError when it has ended already."""
    with transaction.atomic():
        if not _end(record.task_id, PlanningSimulation.Outcome.CANCELLED, f"cancelled by {actor}"):
            record.refresh_from_db()
            raise AgreementError(
                f"The simulation has ended already ({record.outcome}): nothing to cancel.",
                field="task_id",
            )
        audit.record(
            actor=actor,
            action="plan.simulation_cancel",
            target=record,
            study=record.study,
            before={"started": record.started_at is not None},
            after={"outcome": PlanningSimulation.Outcome.CANCELLED},
        )
        transaction.on_commit(functools.partial(_revoke, record.task_id))


def _revoke(task_id: str) -> None:
    # terminate=True: revoke a waiting task and end the process of a running one.
    try:
        current_app.control.revoke(task_id, terminate=True, signal="SIGTERM")
    except Exception:
        logger.warning("could not broadcast the revoke of simulation %s", task_id, exc_info=True)


def simulation_status(*, study: RatingStudy, task_id: str) -> dict[str, Any]:
    """Where a queued simulation of ``study`` is: waiting, running (done/total), finished
    (result), failed (reason), cancelled, or lost (no worker took it). A task id not queued
    as a simulation of this study reads as unknown, whatever Celery holds for it."""
    record = simulation_for_study(study=study, task_id=task_id)
    if record is None:
        return {"state": "unknown"}
    if record.outcome == PlanningSimulation.Outcome.CANCELLED:
        return {"state": "cancelled"}
    if record.outcome in (PlanningSimulation.Outcome.FAILED, PlanningSimulation.Outcome.LOST):
        return {"state": record.outcome, "reason": record.reason}
    result = AsyncResult(task_id, app=current_app)
    state = result.state
    if state == "SUCCESS":
        value = result.result
        if not isinstance(value, dict) or value.get("study_id") != study.pk:
            return {"state": "unknown"}
        return {"state": "finished", "result": value}
    if state == "FAILURE":
        return {"state": "failed", "reason": _failure_reason(result.result)}
    if state == "REVOKED":
        return {"state": "cancelled"}
    if state == "PROGRESS":
        meta = result.info if isinstance(result.info, dict) else {}
        return {"state": "running", "done": meta.get("done", 0), "total": meta.get("total")}
    if state == "STARTED":
        return {"state": "running", "done": 0, "total": None}
    if record.outcome == PlanningSimulation.Outcome.FINISHED:  # its result has expired
        return {"state": "unknown"}
    waited = (timezone.now() - record.created_at).total_seconds()
    if waited > WAITING_TOO_LONG_SECONDS:
        return {"state": "lost", "reason": _lost_reason(waited)}
    return {"state": "waiting"}
