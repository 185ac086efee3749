"""The design simulation in a real Celery worker: queued by the service, its progress read
back while it runs, its result (equal to the same simulation run here) when it ends."""

from __future__ import annotations

import time

import pytest
from django.conf import settings

from agreement.services import planning
from agreement.stats.planning_sim import DesignSpec
from tests.support.celery_worker import running_worker

SPEC = DesignSpec(1.0, 0.4, 0.8, 150, 3, 6, n_studies=3000, seed=21)


def test_the_task_reports_progress_and_returns_the_result(monkeypatch) -> None:
    # the task body, called in this process with update_state observed
    from agreement.tasks import simulate_design_task

    seen: list[dict] = []
    monkeypatch.setattr(
        simulate_design_task, "update_state", lambda state, meta: seen.append(meta | {"s": state})
    )
    small = DesignSpec(1.0, 0.4, 0.8, 30, 2, 4, n_studies=120, seed=2)
    out = simulate_design_task.run(study_id=5, spec=small.__dict__)
    assert [m["done"] for m in seen] == [50, 100, 120]
    assert all(m["s"] == "PROGRESS" and m["study_id"] == 5 for m in seen)
    assert out["study_id"] == 5 and out["n_done"] == 120


@pytest.mark.celery_worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_runs_the_simulation_with_progress(tmp_path) -> None:
    with running_worker(
        broker_url=settings.CELERY_BROKER_URL,
        result_backend=settings.CELERY_RESULT_BACKEND,
        log_path=tmp_path / "worker.log",
    ):
        task_id, inline = planning.start_simulation(study_id=7, spec=SPEC, background=True)
        assert inline is None and task_id
        queued = time.time()
        states: list[dict] = []
        deadline = time.time() + 120
        while time.time() < deadline:
            status = planning.simulation_status(study_id=7, task_id=task_id, queued_at=queued)
            states.append(status)
            if status["state"] in ("finished", "failed", "lost"):
                break
            time.sleep(0.1)
        else:
            print((tmp_path / "worker.log").read_text())
            pytest.fail(f"no result in 120 s; last state {states[-1]}")
    final = states[-1]
    assert final["state"] == "finished", (final, (tmp_path / "worker.log").read_text())
    progress = [s for s in states if s["state"] == "running" and s.get("total")]
    assert progress, [s["state"] for s in states]
    assert all(0 < s["done"] <= s["total"] == SPEC.n_studies for s in progress)
    # another study cannot read it
    assert planning.simulation_status(study_id=8, task_id=task_id, queued_at=queued) == {
        "state": "unknown"
    }
    here = planning.run_simulation(SPEC, study_id=7)
    for key in ("width_median", "width_p90", "icc_median", "coverage", "true_icc"):
        assert final["result"][key] == here[key]
