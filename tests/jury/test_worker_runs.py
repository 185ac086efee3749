"""Jury runs through real Celery workers on Redis, including a worker killed mid-run."""

from __future__ import annotations

import os
import signal
from decimal import Decimal

import pytest
from celery import Celery

from jury import services
from jury.models import Judge, JudgeCall, JuryRun
from tests.factories import make_study_with_members
from tests.support.celery_worker import child_pids, running_worker, wait_for
from tests.support.redis_db import flushes_redis
from tests.support.services import require_service

REDIS_URL = "redis://127.0.0.1:6379/14"

pytestmark = flushes_redis(REDIS_URL)


@pytest.fixture
def redis_broker(monkeypatch):
    require_service("Redis", "127.0.0.1", 6379)
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()
    # Celery lets CELERY_BROKER_URL in the environment override a client's broker.
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("CELERY_RESULT_BACKEND", raising=False)
    return REDIS_URL


def send(call_ids) -> None:
    """Send calls to the workers as start_run does, through a client on the test broker."""
    client = Celery("test-client", broker=REDIS_URL, set_as_current=False)
    for call_id in call_ids:
        client.send_task("jury.execute_judge_call", args=[call_id])
    client.close()


def start(study, judge) -> JuryRun:
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    send(run.calls.values_list("pk", flat=True))
    return run


@pytest.mark.celery_worker
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_run_on_a_real_worker_with_redis(tmp_path, redis_broker, fake_provider):
    study = make_study_with_members(n_items=6, n_clinicians=2, k=2).study
    judge = Judge.objects.create(
        name="gpt",
        provider="openai",
        model_id="m",
        endpoint=fake_provider.openai_url,
        api_key_env="MEDHELM_JUDGE_KEY_FAKE",
        max_concurrency=3,
        price_input_per_mtok=Decimal(1),
        price_output_per_mtok=Decimal(2),
    )
    fake_provider.latency_seconds = 0.1
    with running_worker(
        broker_url=redis_broker,
        result_backend=redis_broker,
        log_path=tmp_path / "w.log",
        concurrency=4,
        extra_env={"MEDHELM_JUDGE_KEY_FAKE": "sk-test"},
    ):
        run = start(study, judge)
        wait_for(
            lambda: JuryRun.objects.get(pk=run.pk).status == "finished", 90, "the run to finish"
        )
    assert run.calls.filter(status="ok").count() == 6
    assert fake_provider.max_in_flight <= 3
    assert fake_provider.total_requests == 6


@pytest.mark.celery_worker
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_resume_after_a_worker_is_killed_mid_run(tmp_path, redis_broker, fake_provider):
    study = make_study_with_members(n_items=12, n_clinicians=2, k=2).study
    judge = Judge.objects.create(
        name="gpt",
        provider="openai",
        model_id="m",
        endpoint=fake_provider.openai_url,
        api_key_env="MEDHELM_JUDGE_KEY_FAKE",
        max_concurrency=2,
        timeout_seconds=30,
        price_input_per_mtok=Decimal(1),
        price_output_per_mtok=Decimal(2),
    )
    fake_provider.latency_seconds = 0.6
    env = {"MEDHELM_JUDGE_KEY_FAKE": "sk-test"}
    with running_worker(
        broker_url=redis_broker,
        result_backend=redis_broker,
        log_path=tmp_path / "w1.log",
        concurrency=2,
        extra_env=env,
    ) as worker:
        run = start(study, judge)
        wait_for(lambda: run.calls.filter(status="ok").count() >= 3, 90, "three calls done")
        # SIGKILL the worker and its pool processes: no warm shutdown, leases left behind.
        for child in child_pids(worker.pid):
            os.kill(child, signal.SIGKILL)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
    done_before = set(run.calls.filter(status="ok").values_list("prompt_hash", flat=True))
    assert run.calls.filter(status="pending").exists()
    requests_before = dict(fake_provider.per_prompt_hash)
    resent = services.resume_run(run=run, actor=None, dispatch=False)
    pending = list(run.calls.filter(status="pending").values_list("pk", flat=True))
    assert resent == len(pending) > 0
    send(pending)
    with running_worker(
        broker_url=redis_broker,
        result_backend=redis_broker,
        log_path=tmp_path / "w2.log",
        concurrency=2,
        extra_env=env,
    ):
        wait_for(
            lambda: JuryRun.objects.get(pk=run.pk).status == "finished",
            120,
            "the resumed run to finish",
        )
    assert run.calls.filter(status="ok").count() == 12
    # What was done before the kill was not asked again, and every call was billed once.
    for prompt_hash in done_before:
        assert fake_provider.per_prompt_hash[_fake_key(prompt_hash, run)] == requests_before.get(
            _fake_key(prompt_hash, run), 0
        )
    assert JudgeCall.objects.filter(run=run, cost__isnull=True).count() == 0
    assert JudgeCall.objects.filter(run=run, cached_from__isnull=False).count() == 0


def _fake_key(prompt_hash: str, run: JuryRun) -> str:
    """The fake server counts requests by a key of the prompt text; map our call to it."""
    from tests.support.fake_provider import prompt_key

    call = run.calls.get(prompt_hash=prompt_hash)
    return prompt_key(call.prompt_text)
