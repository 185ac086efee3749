"""The real server killed and restarted in the middle of a run: llama-cpp-python's own
OpenAI-compatible server (the packaged SmolLM2), a real Celery worker on Redis.

A short outage: the calls pause while it is away (the page says "provider unreachable
since ..."), and every call is answered once it is back on the same port; none ends as a
provider error or a timeout. An outage longer than the judge's retry budget: the calls end
as provider errors that say the provider was unreachable, and a resume once the server is
back answers every one. Either way each call's attempt history keeps every request sent,
the failed ones included, numbered without gaps."""

from __future__ import annotations

import importlib.util
from collections import Counter

import pytest
from django.utils import timezone

from jury import selectors, services
from jury.models import Judge, JudgeAttempt, JudgeCall, JuryRun
from jury.providers.structured import JSON_OBJECT_SCHEMA
from tests.factories import make_study_with_members
from tests.jury.factories import call_ids
from tests.support.attempts import assert_history_intact
from tests.support.celery_worker import running_worker, wait_for
from tests.support.llama_server import MODEL_ALIAS, LlamaServer
from tests.support.redis_db import flushes_redis
from tests.support.services import require_service
from tests.support.unavailable import unavailable

# This module's own Redis database (broker, limits and breakers), flushed by the test.
BROKER = "redis://127.0.0.1:6379/10"

pytestmark = [
    flushes_redis(BROKER),
    pytest.mark.local_model,
    pytest.mark.slow,
    pytest.mark.redis,
    pytest.mark.celery_worker,
]


@pytest.fixture
def worker_redis(settings, monkeypatch) -> str:
    require_service("Redis", "127.0.0.1", 6379)
    if importlib.util.find_spec("llama_cpp") is None:
        unavailable("llama_cpp is not installed", in_ci_then=": make install builds it")
    import redis

    redis.Redis.from_url(BROKER).flushdb()
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("CELERY_RESULT_BACKEND", raising=False)
    settings.JURY_LIMITER = "redis"
    settings.JURY_LIMITER_REDIS_URL = BROKER
    settings.JURY_LIMITER_PREFIX = ""  # the default, as the worker has it
    return BROKER


def send_chunk(ids: list[int]) -> None:
    from celery import Celery

    client = Celery("test-client", broker=BROKER, set_as_current=False)
    client.send_task("jury.execute_judge_calls", args=[ids])
    client.close()


@pytest.mark.timeout(900)  # six answers of about 20 s each on one thread, and a restart
@pytest.mark.django_db(transaction=True)
def test_a_kill_and_restart_of_the_real_server_mid_run_ends_with_every_call_answered(
    tmp_path, worker_redis
):
    server = LlamaServer(tmp_path / "llama.log")
    server.start()
    try:
        study = make_study_with_members(n_items=6, n_clinicians=2, k=2).study
        judge = Judge.objects.create(
            name="smollm2-server",
            provider="openai",
            model_id=MODEL_ALIAS,
            endpoint=server.base_url,
            api_key_env="MEDHELM_JUDGE_KEY_LLAMA",
            params={"temperature": 0, "max_tokens": 256},
            # llama.cpp refuses the default json_schema response format (HTTP 500).
            structured_output=JSON_OBJECT_SCHEMA,
            max_concurrency=1,
        )
        run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
        env = {
            "MEDHELM_JUDGE_KEY_LLAMA": "not-checked-by-the-server",
            "JURY_LIMITER": "redis",
            "JURY_LIMITER_REDIS_URL": BROKER,
            "JURY_BREAKER_THRESHOLD": "2",
            "JURY_BREAKER_PROBE_SECONDS": "1",
        }
        with running_worker(
            broker_url=BROKER,
            result_backend=BROKER,
            log_path=tmp_path / "worker.log",
            concurrency=1,
            extra_env=env,
        ):
            send_chunk(call_ids(run))
            wait_for(lambda: run.calls.filter(status="ok").count() >= 2, 300, "two answers")
            server.kill()  # SIGKILL: the request in flight is reset, then refused
            wait_for(lambda: selectors.provider_outages(run=run), 60, "the outage noticed")
            assert not run.calls.filter(status__in=["provider_error", "timeout"]).exists()
            server.start()  # same port; waits until /v1/models answers
            wait_for(
                lambda: JuryRun.objects.get(pk=run.pk).status == "finished",
                600,
                "the run to finish",
            )
        assert server.starts == 2
        statuses = Counter(run.calls.values_list("status", flat=True))
        # None lost to the outage. A 135M judge may still score off the scale (seen: a 6 on
        # 1-5 under llama.cpp's json_object schema), which is stored as invalid_verdict.
        assert set(statuses) <= {"ok", "invalid_verdict"} and statuses["ok"] >= 2, statuses
        assert not selectors.provider_outages(run=run)
        print_figures(run, "kill and restart mid-run")
        assert_history_intact(run)
        # The request in flight when the server died, at least, failed and stays recorded.
        assert JudgeAttempt.objects.filter(call__run=run).exclude(outcome="ok").exists()
    finally:
        server.stop()


def print_figures(run: JuryRun, label: str) -> None:
    """The run's figures for the issue's closing note (shown with pytest -s)."""
    run.refresh_from_db()
    attempts = JudgeAttempt.objects.filter(call__run=run)
    by_outcome = Counter(attempts.values_list("outcome", flat=True))
    end = run.finished_at or timezone.now()
    wall = (end - (run.started_at or run.created_at)).total_seconds()
    print(
        f"\n[{label}] calls by status {dict(Counter(run.calls.values_list('status', flat=True)))}"
        f"; attempts {attempts.count()} by outcome {dict(by_outcome)}; wall time {wall:.0f} s"
    )


@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True)
def test_an_outage_longer_than_the_retry_budget_ends_visibly_and_a_resume_answers_every_call(
    tmp_path, worker_redis
):
    server = LlamaServer(tmp_path / "llama.log")  # not started: down when the run starts
    try:
        study = make_study_with_members(n_items=3, n_clinicians=2, k=2).study
        judge = Judge.objects.create(
            name="smollm2-server",
            provider="openai",
            model_id=MODEL_ALIAS,
            endpoint=server.base_url,
            api_key_env="MEDHELM_JUDGE_KEY_LLAMA",
            params={"temperature": 0, "max_tokens": 256},
            structured_output=JSON_OBJECT_SCHEMA,
            max_concurrency=1,
            retry_budget_seconds=4,
        )
        run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
        env = {
            "MEDHELM_JUDGE_KEY_LLAMA": "not-checked-by-the-server",
            "JURY_LIMITER": "redis",
            "JURY_LIMITER_REDIS_URL": BROKER,
            "JURY_BREAKER_THRESHOLD": "2",
            "JURY_BREAKER_PROBE_SECONDS": "1",
        }
        with running_worker(
            broker_url=BROKER,
            result_backend=BROKER,
            log_path=tmp_path / "worker.log",
            concurrency=1,
            extra_env=env,
        ):
            send_chunk(call_ids(run))
            wait_for(
                lambda: JuryRun.objects.get(pk=run.pk).status == "finished",
                120,
                "the run to end in provider errors",
            )
            failed = run.calls.filter(status=JudgeCall.Status.PROVIDER_ERROR)
            assert failed.count() == run.calls.count()
            for error in failed.values_list("error", flat=True):
                assert "unreachable since" in error, error
            assert_history_intact(run)
            before = {
                call.pk: list(call.attempt_log.values_list("number", "outcome", "error"))
                for call in run.calls.all()
            }
            assert all(before.values()), before  # each call sent at least one request

            server.start()  # same port
            run.refresh_from_db()
            resent = services.resume_run(run=run, actor=None, dispatch=False)
            assert resent == run.calls.count()
            send_chunk(call_ids(run))
            wait_for(
                lambda: JuryRun.objects.get(pk=run.pk).status == "finished",
                600,
                "the resumed run to finish",
            )
        statuses = Counter(run.calls.values_list("status", flat=True))
        print_figures(run, "outage past the retry budget, then resume")
        assert set(statuses) <= {"ok", "invalid_verdict"}, statuses
        assert_history_intact(run)
        for call in run.calls.all():  # the failed requests before the resume are kept as they were
            after = list(call.attempt_log.values_list("number", "outcome", "error"))
            assert after[: len(before[call.pk])] == before[call.pk]
            assert len(after) == len(before[call.pk]) + 1
    finally:
        server.stop()
