"""A provider outage in the middle of a chunk run on a real Celery worker (Redis limits and
breakers): the calls pause without spending attempts, the page and `run_jury` say "provider
unreachable since ..." while it lasts, and every call ends ok once the provider is back.
Also: a timed-out call of a chunk keeps the time its requests took."""

from __future__ import annotations

import io
import threading
import time

import pytest
from django.core.management import call_command
from django.db import connections

from jury import execution, services
from jury.models import JuryRun
from tests.factories import make_study_with_members
from tests.jury.factories import call_ids, make_judge, one_item_run
from tests.support.celery_worker import running_worker, wait_for
from tests.support.redis_db import flushes_redis
from tests.support.services import require_service

# This module's own Redis database (broker, limits and breakers), flushed by the test.
BROKER = "redis://127.0.0.1:6379/10"

pytestmark = [pytest.mark.redis, flushes_redis(BROKER)]

OUTAGE_TEXT = "provider unreachable since"
# Longer than the old retry budget of a call (about 7.5 s of backoff over 5 attempts).
OUTAGE_SECONDS = 10.0


@pytest.mark.usefixtures("chunk_limits")
def test_a_timed_out_call_in_a_chunk_keeps_the_time_its_requests_took(study, fake_provider):
    judge = make_judge(fake_provider, timeout_seconds=0.5, params={"max_attempts": 2})
    run = one_item_run(study, judge)
    fake_provider.enqueue("timeout", "timeout")
    execution.execute_calls(call_ids=call_ids(run))
    call = run.calls.get()
    assert (call.status, call.attempts) == ("timeout", 2)
    assert call.latency_ms is not None and call.latency_ms >= 1000


def send_chunk(ids: list[int]) -> None:
    from celery import Celery

    client = Celery("test-client", broker=BROKER, set_as_current=False)
    client.send_task("jury.execute_judge_calls", args=[ids])
    client.close()


@pytest.fixture
def worker_redis(settings, monkeypatch) -> str:
    """The test's side of the worker's Redis: the same limits and breakers (default prefix)."""
    require_service("Redis", "127.0.0.1", 6379)
    import redis

    redis.Redis.from_url(BROKER).flushdb()
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("CELERY_RESULT_BACKEND", raising=False)
    settings.JURY_LIMITER = "redis"
    settings.JURY_LIMITER_REDIS_URL = BROKER
    settings.JURY_LIMITER_PREFIX = ""  # the default, as the worker has it
    return BROKER


@pytest.mark.celery_worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_outage_mid_run_pauses_the_calls_and_all_end_ok(
    tmp_path, client, fake_provider, worker_redis
):
    setup = make_study_with_members(n_items=10, n_clinicians=2, k=2)
    # The default attempts (5); two judges' worth of slots.
    judge = make_judge(
        fake_provider,
        max_concurrency=2,
        timeout_seconds=30,
        params={"temperature": 0, "max_tokens": 512},
    )
    fake_provider.latency_seconds = 0.3
    run = services.start_run(study=setup.study, judges=[judge], actor=None, dispatch=False)
    client.force_login(setup.coordinator)
    page = f"/studies/{setup.study.pk}/jury/runs/{run.pk}/"
    env = {
        "MEDHELM_JUDGE_KEY_FAKE": "sk-test",
        "JURY_LIMITER": "redis",
        "JURY_LIMITER_REDIS_URL": BROKER,
        "JURY_BREAKER_THRESHOLD": "2",
        "JURY_BREAKER_PROBE_SECONDS": "0.5",
    }
    watched = io.StringIO()
    with running_worker(
        broker_url=BROKER,
        result_backend=BROKER,
        log_path=tmp_path / "worker.log",
        concurrency=1,
        extra_env=env,
    ):
        send_chunk(call_ids(run))
        wait_for(lambda: run.calls.filter(status="ok").count() >= 2, 90, "two calls answered")
        fake_provider.stop()
        watcher = threading.Thread(
            target=lambda: (
                call_command("run_jury", watch=run.pk, stdout=watched),
                connections.close_all(),
            )
        )
        watcher.start()
        wait_for(lambda: OUTAGE_TEXT in client.get(page).content.decode(), 30, "the outage shown")
        time.sleep(OUTAGE_SECONDS)
        assert run.calls.filter(status="provider_error").count() == 0
        fake_provider.start()  # back on the same port
        wait_for(
            lambda: JuryRun.objects.get(pk=run.pk).status == "finished", 90, "the run to finish"
        )
        watcher.join(timeout=30)
    assert set(run.calls.values_list("status", flat=True)) == {"ok"}
    assert OUTAGE_TEXT not in client.get(page).content.decode()
    output = watched.getvalue()
    assert f"{judge.name}: {OUTAGE_TEXT}" in output, output
    assert f"{judge.name}: provider reachable again" in output, output
