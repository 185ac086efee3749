"""The demo's Celery workers (settings.MEDHELM_DEMO_WORKERS, what `manage.py rundemo` starts)
on the demo's embedded SQLite broker: the automatic metrics never wait behind judge calls."""

from __future__ import annotations

import contextlib

import pytest
from celery import Celery

from jury import services
from jury.models import MetricScore
from medhelm_site.common import task_names
from tests.factories import make_study_with_members
from tests.jury.factories import make_judge
from tests.support.celery_worker import running_worker, wait_for

N_ITEMS = 4


def site_client(broker_url: str) -> Celery:
    """A client with the site's Celery settings (its task routes) on the test's broker."""
    client = Celery("test-client", set_as_current=False)
    client.config_from_object("django.conf:settings", namespace="CELERY")
    client.conf.broker_url = broker_url
    return client


def judge_processes(client: Celery, workers: dict[str, dict]) -> int:
    """How many worker processes take judge calls: those of the workers consuming their queue."""
    queue = client.amqp.router.route({}, task_names.EXECUTE_CALL)["queue"].name
    return sum(w["concurrency"] for w in workers.values() if queue in w["queues"])


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_metrics_are_stored_while_every_judge_process_is_held(
    tmp_path, fake_provider, monkeypatch, settings
):
    # Celery lets CELERY_BROKER_URL in the environment override a client's broker.
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("CELERY_RESULT_BACKEND", raising=False)
    broker = f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}"
    results = f"db+sqlite:///{tmp_path / 'results.sqlite3'}"
    study = make_study_with_members(n_items=N_ITEMS, n_clinicians=2, k=2).study
    # A judge slower than the test: its calls are held until the workers stop.
    judge = make_judge(fake_provider, name="slow", max_concurrency=8, timeout_seconds=3600)
    fake_provider.latency_seconds = 3600
    client = site_client(broker)
    workers = settings.MEDHELM_DEMO_WORKERS
    with contextlib.ExitStack() as stack:
        for name, worker in workers.items():
            stack.enter_context(
                running_worker(
                    broker_url=broker,
                    result_backend=results,
                    log_path=tmp_path / f"{name}.log",
                    concurrency=worker["concurrency"],
                    queues=worker["queues"],
                    hostname=f"{name}@test",
                    extra_env={"MEDHELM_JUDGE_KEY_FAKE": "sk-test"},
                )
            )
        run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
        for call_id in run.calls.values_list("pk", flat=True):
            client.send_task(task_names.EXECUTE_CALL, args=[call_id])
        busy = judge_processes(client, workers)
        wait_for(lambda: fake_provider.in_flight == busy, 120, "every judge process to hold a call")

        client.send_task(task_names.COMPUTE_METRICS, args=[study.pk, ["rouge_l_f1"], None])
        wait_for(
            lambda: MetricScore.objects.filter(item__study=study).count() == N_ITEMS,
            120,
            "ROUGE-L of every item while the judge calls are held",
        )
        assert not run.calls.filter(status="ok").exists()
