"""The broker (a Redis of the test's own, also holding the judges' limits) restarted without
its data in the middle of a jury run on a real Celery worker: the worker reconnects, the
messages lost with the broker are sent again by the sweep (Celery beat), and the run ends
with every call answered, each asked of the provider once per attempt recorded."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from celery import Celery

from jury import services
from jury.models import JudgeCall, JuryRun
from tests.factories import make_study_with_members
from tests.jury.factories import call_ids, make_judge
from tests.support.attempts import assert_rows_are_the_requests
from tests.support.celery_worker import running_worker, wait_for
from tests.support.private_redis import REDIS_SERVER, private_redis

pytestmark = [
    pytest.mark.slow,
    pytest.mark.celery_worker,
    pytest.mark.redis,
    pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed"),
]
N_ITEMS, OUTAGE_SECONDS = 12, 2.0


def send_chunks(broker_url: str, ids: list[int], size: int = 2) -> None:
    client = Celery("test-client", broker=broker_url, set_as_current=False)
    for start in range(0, len(ids), size):
        client.send_task("jury.execute_judge_calls", args=[ids[start : start + size]])
    client.close()


@pytest.mark.django_db(transaction=True)
def test_a_run_survives_a_broker_restart(tmp_path: Path, monkeypatch, fake_provider):
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("CELERY_RESULT_BACKEND", raising=False)
    study = make_study_with_members(n_items=N_ITEMS, n_clinicians=2, k=2).study
    judge = make_judge(fake_provider, max_concurrency=2, timeout_seconds=30)
    fake_provider.latency_seconds = 0.5
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    with private_redis(tmp_path / "redis.log") as broker:
        env = {
            "MEDHELM_JUDGE_KEY_FAKE": "sk-test",
            "JURY_LIMITER": "redis",
            "JURY_LIMITER_REDIS_URL": broker.url,
            "JURY_SWEEP_INTERVAL_SECONDS": "1",
            "JURY_SWEEP_GRACE_SECONDS": "3",
        }
        with running_worker(
            broker_url=broker.url,
            result_backend=broker.url,
            log_path=tmp_path / "worker.log",
            concurrency=2,
            extra_env=env,
            beat_schedule=tmp_path / "beat-schedule",
        ):
            send_chunks(broker.url, call_ids(run))
            wait_for(lambda: run.calls.filter(status="ok").count() >= 3, 60, "three calls done")
            before = Counter(run.calls.values_list("status", flat=True))
            down = time.monotonic()
            broker.stop()
            time.sleep(OUTAGE_SECONDS)
            broker.start()
            up = time.monotonic()
            try:
                wait_for(
                    lambda: JuryRun.objects.get(pk=run.pk).status == JuryRun.Status.FINISHED,
                    120,
                    "the run to finish after the broker restart",
                )
            finally:
                finished = time.monotonic()
                after = Counter(run.calls.values_list("status", flat=True))
                attempts = sum(run.calls.values_list("attempts", flat=True))
                swept = run.calls.filter(sweeps__gt=0).count()
                print(
                    f"\nFAULT broker restart: outage {up - down:.1f} s; calls by status at the "
                    f"restart {dict(before)}, at the end {dict(after)}; calls sent again by the "
                    f"sweep {swept}; provider requests {fake_provider.total_requests} vs "
                    f"attempts recorded {attempts}; run finished {finished - up:.1f} s after "
                    "the broker was back"
                )
    assert after == {"ok": N_ITEMS}
    assert JudgeCall.objects.filter(run=run, cost__isnull=True).count() == 0
    # Nothing billed twice: one request per attempt recorded, and each call asked once.
    assert_rows_are_the_requests(run, fake_provider)
    assert sorted(fake_provider.per_prompt_hash.values()) == [1] * N_ITEMS
