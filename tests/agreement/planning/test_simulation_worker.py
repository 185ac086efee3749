"""The design simulation in a real Celery worker (on the session's embedded broker): queued by
the service on the planning queue, its progress read back while it runs, its result (equal to
the same simulation run here) when it ends; and a cancel from its status page stops it."""

from __future__ import annotations

import time

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from agreement.models import PlanningSimulation
from agreement.services import planning, simulations
from agreement.stats.planning_sim import DesignSpec
from tests.factories import make_study_with_members
from tests.support.celery_worker import running_worker, wait_for

SPEC = DesignSpec(1.0, 0.4, 0.8, 150, 3, 6, n_studies=3000, seed=21)


@pytest.mark.django_db
def test_the_task_reports_progress_and_returns_the_result(monkeypatch) -> None:
    # the task body, through Celery's eager path in this process, with update_state observed
    from agreement.tasks import simulate_design_task

    built = make_study_with_members(n_items=2, n_clinicians=2)
    small = DesignSpec(1.0, 0.4, 0.8, 30, 2, 4, n_studies=120, seed=2)
    record = PlanningSimulation.objects.create(
        task_id="t-eager", study=built.study, requested_by=built.coordinator, spec=small.__dict__
    )
    seen: list[dict] = []
    monkeypatch.setattr(
        simulate_design_task, "update_state", lambda state, meta: seen.append(meta | {"s": state})
    )
    out = simulate_design_task.apply(
        kwargs={"study_id": built.study.pk, "spec": small.__dict__}, task_id=record.task_id
    ).get()
    assert [m["done"] for m in seen] == [50, 100, 120]
    assert all(m["s"] == "PROGRESS" and m["study_id"] == built.study.pk for m in seen)
    assert out["study_id"] == built.study.pk and out["n_done"] == 120


def _follow(study, task_id: str, until: tuple[str, ...], log, seconds: float = 120) -> list[dict]:
    states: list[dict] = []
    deadline = time.time() + seconds
    while time.time() < deadline:
        states.append(simulations.simulation_status(study=study, task_id=task_id))
        if states[-1]["state"] in until:
            return states
        time.sleep(0.1)
    pytest.fail(f"not {until} in {seconds} s; last state {states[-1]}\n{log.read_text()}")


@pytest.mark.celery_worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_runs_the_simulation_with_progress(tmp_path) -> None:
    built = make_study_with_members(n_items=2, n_clinicians=2)
    other = make_study_with_members(n_items=2, n_clinicians=2, name="Other")
    log = tmp_path / "worker.log"
    with running_worker(
        broker_url=settings.CELERY_BROKER_URL,
        result_backend=settings.CELERY_RESULT_BACKEND,
        log_path=log,
    ):
        record, inline = simulations.start_simulation(
            study=built.study, actor=built.researcher, spec=SPEC, background=True
        )
        assert inline is None and record.task_id
        states = _follow(built.study, record.task_id, ("finished", "failed", "lost"), log)
    final = states[-1]
    assert final["state"] == "finished", (final, log.read_text())
    progress = [s for s in states if s["state"] == "running" and s.get("total")]
    assert progress, [s["state"] for s in states]
    assert all(0 < s["done"] <= s["total"] == SPEC.n_studies for s in progress)
    record.refresh_from_db()
    assert record.outcome == "finished" and record.started_at and record.ended_at
    # another study cannot read it
    assert simulations.simulation_status(study=other.study, task_id=record.task_id) == {
        "state": "unknown"
    }
    here = planning.run_simulation(SPEC, study_id=built.study.pk)
    for key in ("width_median", "width_p90", "icc_median", "coverage", "true_icc"):
        assert final["result"][key] == here[key]


#: About a minute of a core or more: far longer than the test waits after the cancel.
LONG = {
    "question": "simulation",
    "simulation-item_sd": 1.0,
    "simulation-rater_sd": 0.3,
    "simulation-error_sd": 0.7,
    "simulation-n_items": 100,
    "simulation-raters_per_item": 2,
    "simulation-n_raters": 4,
    "simulation-form": "MedHELM pairs",
    "simulation-confidence": 0.95,
    "simulation-n_studies": 5000,
    "simulation-seed": 1,
}


@pytest.mark.celery_worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_cancelled_simulation_stops_its_worker(tmp_path, settings) -> None:
    settings.AGREEMENT_REPORTS_IN_BACKGROUND = True
    built = make_study_with_members(n_items=2, n_clinicians=2)
    c = Client()
    c.force_login(built.researcher)
    plan = reverse("agreement:plan", kwargs={"study_id": built.study.pk})
    log = tmp_path / "worker.log"
    with running_worker(
        broker_url=settings.CELERY_BROKER_URL,
        result_backend=settings.CELERY_RESULT_BACKEND,
        log_path=log,
        concurrency=1,
    ):
        assert c.post(plan, LONG).status_code == 303
        first = PlanningSimulation.objects.get()
        _follow(built.study, first.task_id, ("running",), log)
        page = reverse(
            "agreement:plan-simulation",
            kwargs={"study_id": built.study.pk, "task_id": first.task_id},
        )
        assert 'data-testid="simulation-cancel"' in c.get(page).content.decode()
        response = c.post(page + "cancel/")
        assert response.status_code == 303 and response["Location"] == page
        assert 'data-state="cancelled"' in c.get(page).content.decode()
        # the one worker process is free again: a short simulation of the same user (whose
        # slot the cancel freed) finishes long before the cancelled one would have
        cancelled_at = time.monotonic()
        short = LONG | {"simulation-n_studies": 20, "simulation-form": "ICC(1,1)"}
        assert c.post(plan, short).status_code == 303
        second = PlanningSimulation.objects.get(ended_at=None)
        _follow(built.study, second.task_id, ("finished", "failed"), log, seconds=60)
        assert time.monotonic() - cancelled_at < 60
    assert simulations.simulation_status(study=built.study, task_id=second.task_id)["state"] == (
        "finished"
    )
    first.refresh_from_db()
    assert first.outcome == "cancelled"
    wait_for(lambda: "ignored" in log.read_text().lower(), 5, "the worker to log the stop")
