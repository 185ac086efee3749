"""Real Celery workers on Redis. Every call ends, every run ends: calls that gave up their
wait for a slot (a judge of concurrency 2 on a slow server) are sent again by the sweep that
Celery beat runs, and the run finishes. A server's limit holds across worker processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from jury import services
from jury.limits.endpoints import origin_of
from jury.models import EndpointLimit, JuryRun
from tests.factories import make_study_with_members
from tests.jury.factories import call_ids, make_judge
from tests.support.celery_worker import running_worker, wait_for
from tests.support.redis_db import flushes_redis

WORKER_BROKER = "redis://127.0.0.1:6379/8"

pytestmark = [
    flushes_redis(WORKER_BROKER),
    pytest.mark.redis,
    pytest.mark.celery_worker,
    pytest.mark.slow,
]

LIMITS_REDIS = "redis://127.0.0.1:6379/13"


@pytest.fixture
def broker(chunk_limits, monkeypatch) -> str:
    import redis

    redis.Redis.from_url(WORKER_BROKER).flushdb()
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("CELERY_RESULT_BACKEND", raising=False)
    return WORKER_BROKER


def worker_env(prefix: str, **extra: str) -> dict[str, str]:
    """The worker's settings: the test's limiter keys, a slot wait of 2.5 s, a quick sweep."""
    return {
        "MEDHELM_JUDGE_KEY_FAKE": "sk-test",
        "JURY_LIMITER": "redis",
        "JURY_LIMITER_REDIS_URL": LIMITS_REDIS,
        "JURY_LIMITER_PREFIX": prefix,
        "JURY_MAX_WAIT_FOR_SLOT_SECONDS": "2.5",
        "JURY_SWEEP_INTERVAL_SECONDS": "1",
        "JURY_SWEEP_GRACE_SECONDS": "2",
        **extra,
    }


def send_chunk(ids: list[int]) -> None:
    from celery import Celery

    client = Celery("test-client", broker=WORKER_BROKER, set_as_current=False)
    client.send_task("jury.execute_judge_calls", args=[ids])
    client.close()


@pytest.mark.django_db(transaction=True)
def test_calls_that_gave_up_their_wait_are_swept_and_the_run_finishes(
    tmp_path: Path, broker, chunk_limits, fake_provider
):
    study = make_study_with_members(n_items=8, n_clinicians=2, k=2).study
    judge = make_judge(fake_provider, max_concurrency=2, timeout_seconds=30)
    fake_provider.latency_seconds = 1.0  # 8 calls, 2 at a time: the last ones wait 3 s
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    with running_worker(
        broker_url=broker,
        result_backend=broker,
        log_path=tmp_path / "worker.log",
        concurrency=1,
        extra_env=worker_env(chunk_limits),
        beat_schedule=tmp_path / "beat-schedule",
    ):
        send_chunk(call_ids(run))
        wait_for(
            lambda: JuryRun.objects.get(pk=run.pk).status == JuryRun.Status.FINISHED,
            60,
            "the run to finish",
        )
    log = (tmp_path / "worker.log").read_text()
    assert "left pending for the sweep" in log  # some calls did give up their wait
    assert run.calls.filter(status="ok").count() == 8
    assert run.calls.filter(sweeps__gt=0).exists()
    assert fake_provider.max_in_flight <= 2
    assert sorted(fake_provider.per_prompt_hash.values()) == [1] * 8  # each asked once


@pytest.mark.django_db(transaction=True)
def test_two_judges_on_one_server_share_its_limit_across_worker_processes(
    tmp_path: Path, broker, chunk_limits, fake_provider
):
    study = make_study_with_members(n_items=6, n_clinicians=2, k=2).study
    EndpointLimit.objects.create(origin=origin_of(fake_provider.openai_url), max_concurrency=2)
    judges = [
        make_judge(fake_provider, name=name, max_concurrency=2, timeout_seconds=30)
        for name in ("judge-a", "judge-b")
    ]
    fake_provider.latency_seconds = 0.5
    run = services.start_run(study=study, judges=judges, actor=None, dispatch=False)
    with running_worker(
        broker_url=broker,
        result_backend=broker,
        log_path=tmp_path / "worker.log",
        concurrency=2,  # two processes, a chunk (a judge) each
        extra_env=worker_env(chunk_limits, JURY_MAX_WAIT_FOR_SLOT_SECONDS="60"),
    ):
        for judge in judges:
            send_chunk(list(run.calls.filter(judge=judge).values_list("pk", flat=True)))
        wait_for(
            lambda: JuryRun.objects.get(pk=run.pk).status == JuryRun.Status.FINISHED,
            60,
            "the run to finish",
        )
    assert run.calls.filter(status="ok").count() == 12
    assert fake_provider.max_in_flight == 2
