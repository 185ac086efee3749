"""A real worker killed in the middle of a chunk: what was answered stays answered (and is
not asked again), the calls in flight stay pending, and a resumed chunk on a new worker
finishes them once the dead worker's slots and claims have lapsed."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from jury import services
from jury.models import JuryRun
from tests.factories import make_study_with_members
from tests.jury.factories import call_ids, make_judge
from tests.support.celery_worker import child_pids, running_worker, wait_for
from tests.support.fake_provider import prompt_key
from tests.support.redis_db import flushes_redis

WORKER_BROKER = "redis://127.0.0.1:6379/14"

pytestmark = [
    flushes_redis(WORKER_BROKER),
    pytest.mark.redis,
    pytest.mark.usefixtures("chunk_limits"),
]

WORKER_ENV = {"MEDHELM_JUDGE_KEY_FAKE": "sk-test", "JURY_LIMITER": "redis"}


def send_chunk(ids: list[int]) -> None:
    from celery import Celery

    client = Celery("test-client", broker=WORKER_BROKER, set_as_current=False)
    client.send_task("jury.execute_judge_calls", args=[ids])
    client.close()


def worker(log_path: Path):
    return running_worker(
        broker_url=WORKER_BROKER,
        result_backend=WORKER_BROKER,
        log_path=log_path,
        concurrency=1,
        extra_env=WORKER_ENV,
    )


def kill_a_worker_midway(run: JuryRun, *, after_ok: int, log_path: Path) -> None:
    """Send the run's calls as one chunk to a worker; SIGKILL it and its pool once `after_ok`
    calls are answered."""
    with worker(log_path) as process:
        send_chunk(call_ids(run))
        wait_for(lambda: run.calls.filter(status="ok").count() >= after_ok, 90, "calls done")
        for child in child_pids(process.pid):
            os.kill(child, signal.SIGKILL)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()


def resume_on_a_new_worker(run: JuryRun, *, log_path: Path) -> None:
    """Resume the run, send its pending calls as one chunk to a new worker, wait for the end."""
    assert services.resume_run(run=run, actor=None, dispatch=False) > 0
    send_chunk(list(run.calls.filter(status="pending").values_list("pk", flat=True)))
    with worker(log_path):
        wait_for(
            lambda: JuryRun.objects.get(pk=run.pk).status == "finished",
            120,
            "the resumed run to finish",
        )


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_resume_after_a_worker_is_killed_in_the_middle_of_a_chunk(
    tmp_path, fake_provider, monkeypatch
):
    import redis

    redis.Redis.from_url(WORKER_BROKER).flushdb()
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("CELERY_RESULT_BACKEND", raising=False)
    study = make_study_with_members(n_items=12, n_clinicians=2, k=2).study
    judge = make_judge(fake_provider, max_concurrency=2, timeout_seconds=30)
    fake_provider.latency_seconds = 0.6
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)

    kill_a_worker_midway(run, after_ok=3, log_path=tmp_path / "w1.log")
    answered = {prompt_key(c.prompt_text) for c in run.calls.filter(status="ok")}
    assert {fake_provider.per_prompt_hash[key] for key in answered} == {1}
    assert run.calls.filter(status="pending").exists()

    resume_on_a_new_worker(run, log_path=tmp_path / "w2.log")
    assert run.calls.filter(status="ok").count() == 12
    # answered before the kill: not asked again; every call billed once
    assert {fake_provider.per_prompt_hash[key] for key in answered} == {1}
    assert not run.calls.filter(cost__isnull=True).exists()
    assert not run.calls.filter(cached_from__isnull=False).exists()
