"""A slow real server (llama-cpp-python's own OpenAI-compatible server, the packaged
SmolLM2, one thread) behind a judge of concurrency 1, a short slot wait and a real worker
with beat: calls that give up their wait are swept, every call ends, the run finishes."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db.models import Count

from jury import services
from jury.models import Judge, JuryRun
from jury.providers import structured
from tests.factories import make_study_with_members
from tests.jury.factories import call_ids
from tests.support.celery_worker import running_worker, wait_for
from tests.support.llama_server import MODEL_ALIAS, running_llama_server
from tests.support.redis_db import flushes_redis

WORKER_BROKER = "redis://127.0.0.1:6379/8"

pytestmark = [
    flushes_redis(WORKER_BROKER),
    pytest.mark.redis,
    pytest.mark.celery_worker,
    pytest.mark.slow,
    pytest.mark.local_model,
]

LIMITS_REDIS = "redis://127.0.0.1:6379/13"


@pytest.mark.django_db(transaction=True)
def test_every_call_against_a_slow_llama_server_ends(tmp_path: Path, chunk_limits, monkeypatch):
    import redis

    redis.Redis.from_url(WORKER_BROKER).flushdb()
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("CELERY_RESULT_BACKEND", raising=False)
    study = make_study_with_members(n_items=5, n_clinicians=2, k=2).study
    env = {
        "JURY_LIMITER": "redis",
        "JURY_LIMITER_REDIS_URL": LIMITS_REDIS,
        "JURY_LIMITER_PREFIX": chunk_limits,
        "JURY_MAX_WAIT_FOR_SLOT_SECONDS": "3",
        "JURY_SWEEP_INTERVAL_SECONDS": "1",
        "JURY_SWEEP_GRACE_SECONDS": "2",
        "JURY_SWEEP_MAX_REDISPATCHES": "10",
    }
    with running_llama_server(tmp_path / "llama.log") as server:
        judge = Judge.objects.create(
            name="smollm2-server",
            provider="openai",
            model_id=MODEL_ALIAS,
            endpoint=server.base_url,
            # llama-cpp-python's server answers response_format json_schema with HTTP 500:
            # the judge asks for the verdict in the prompt only.
            params={"temperature": 0, "max_tokens": 48},
            structured_output=structured.PROMPT_ONLY,
            max_concurrency=1,
            timeout_seconds=120,
        )
        run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
        with running_worker(
            broker_url=WORKER_BROKER,
            result_backend=WORKER_BROKER,
            log_path=tmp_path / "worker.log",
            concurrency=1,
            extra_env=env,
            beat_schedule=tmp_path / "beat-schedule",
        ):
            from celery import Celery

            client = Celery("test-client", broker=WORKER_BROKER, set_as_current=False)
            client.send_task("jury.execute_judge_calls", args=[call_ids(run)])
            client.close()
            wait_for(
                lambda: JuryRun.objects.get(pk=run.pk).status == JuryRun.Status.FINISHED,
                240,
                "the run to finish",
            )
    by_status = dict(run.calls.values_list("status").annotate(n=Count("id")))
    assert "pending" not in by_status and sum(by_status.values()) == 5
    # The server answered every call (a 135M model's verdict may not parse: that is an end).
    assert not run.calls.filter(status__in=["provider_error", "timeout"]).exists(), by_status
    print(
        f"calls by status {by_status}; sweeps {sorted(run.calls.values_list('sweeps', flat=True))}"
    )
