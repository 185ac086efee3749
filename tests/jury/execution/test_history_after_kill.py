"""Kill a real worker in the middle of a run with scripted failures, resume on a new one: the
attempt history of every call that ended before the kill is still there afterwards (the call
failed for good before the kill is re-sent and keeps its failure), each call's attempt count
is its rows, and the rows are every request the provider saw, except those of calls the
killed worker still held (their unsaved attempts die with it; the calls stay pending and are
sent again). On both execution paths: chunks on the engine, and one task per call."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from jury import services
from jury.models import JudgeAttempt, JudgeCall, JuryRun
from tests.factories import make_study_with_members
from tests.jury.factories import call_ids, make_judge
from tests.support.celery_worker import child_pids, running_worker, wait_for
from tests.support.fake_provider import FakeProvider, prompt_key
from tests.support.redis_db import flushes_redis

# A broker database of this module's own: the other worker tests flush theirs.
WORKER_BROKER = "redis://127.0.0.1:6379/11"

pytestmark = [
    flushes_redis(WORKER_BROKER),
    pytest.mark.redis,
    pytest.mark.usefixtures("chunk_limits"),
]

WORKER_ENV = {"MEDHELM_JUDGE_KEY_FAKE": "sk-test", "JURY_LIMITER": "redis"}


def send(path: str, ids: list[int]) -> None:
    """Send calls to the workers as dispatch_calls does on that path."""
    from celery import Celery

    client = Celery("test-client", broker=WORKER_BROKER, set_as_current=False)
    if path == "chunk":
        client.send_task("jury.execute_judge_calls", args=[ids])
    else:
        for call_id in ids:
            client.send_task("jury.execute_judge_call", args=[call_id])
    client.close()


def worker(log_path: Path, path: str):
    return running_worker(
        broker_url=WORKER_BROKER,
        result_backend=WORKER_BROKER,
        log_path=log_path,
        concurrency=1 if path == "chunk" else 2,
        extra_env=WORKER_ENV,
    )


def rows_of(run: JuryRun) -> dict[int, list[tuple]]:
    """Each call's attempt rows: number, outcome, HTTP status."""
    rows: dict[int, list[tuple]] = {pk: [] for pk in call_ids(run)}
    for call_id, *row in (
        JudgeAttempt.objects.filter(call__run=run)
        .order_by("call", "number")
        .values_list("call", "number", "outcome", "http_status")
    ):
        rows[call_id].append(tuple(row))
    return rows


def kill_midway(run: JuryRun, path: str, fake: FakeProvider, log_path: Path) -> None:
    """Run the calls on a worker; SIGKILL it and its pool once the failed call has ended and
    three calls are answered; return when the provider has nothing in flight."""
    with worker(log_path, path) as process:
        send(path, call_ids(run))
        wait_for(
            lambda: (
                run.calls.filter(status="ok").count() >= 3
                and run.calls.filter(status="provider_error").exists()
            ),
            90,
            "three calls answered and one failed",
        )
        for child in child_pids(process.pid):
            os.kill(child, signal.SIGKILL)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    wait_for(lambda: fake.in_flight == 0, 30, "the killed worker's requests to end")


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["chunk", "single"])
def test_kill_and_resume_keeps_every_saved_attempt(tmp_path, fake_provider, monkeypatch, path):
    import redis

    redis.Redis.from_url(WORKER_BROKER).flushdb()
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("CELERY_RESULT_BACKEND", raising=False)
    study = make_study_with_members(n_items=12, n_clinicians=2, k=2).study
    judge = make_judge(fake_provider, max_concurrency=2, timeout_seconds=30)
    fake_provider.latency_seconds = 0.6
    fake_provider.retry_after_seconds = 0
    fake_provider.enqueue("400", "500")  # one call fails for good, one is retried
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)

    kill_midway(run, path, fake_provider, tmp_path / "w1.log")
    before = rows_of(run)
    sent_before = dict(fake_provider.per_prompt_hash)
    calls = {c.pk: c for c in run.calls.all()}
    held = {pk for pk, c in calls.items() if c.status == JudgeCall.Status.PENDING}
    assert held, "the kill came too late: no call was left pending"
    [failed] = [c for c in calls.values() if c.status == "provider_error"]
    assert before[failed.pk] == [(1, "bad_request", 400)]
    for pk, call in calls.items():
        if pk not in held:  # ended before the kill: every request it made is a row
            assert len(before[pk]) == call.attempts == sent_before[prompt_key(call.prompt_text)]

    assert services.resume_run(run=run, actor=None, dispatch=False) == len(held) + 1
    send(path, list(run.calls.filter(status="pending").values_list("pk", flat=True)))
    with worker(tmp_path / "w2.log", path):
        wait_for(
            lambda: JuryRun.objects.get(pk=run.pk).status == "finished",
            120,
            "the resumed run to finish",
        )

    after = rows_of(run)
    assert set(run.calls.values_list("status", flat=True)) == {"ok"}
    assert after[failed.pk] == [(1, "bad_request", 400), (2, "ok", None)]
    lost = 0  # requests of calls the killed worker held: never saved
    for call in run.calls.all():
        sent = fake_provider.per_prompt_hash[prompt_key(call.prompt_text)]
        assert after[call.pk][: len(before[call.pk])] == before[call.pk]  # kept
        assert [n for n, *_ in after[call.pk]] == list(range(1, call.attempts + 1))
        if call.pk in held:
            lost += sent_before.get(prompt_key(call.prompt_text), 0)
            assert call.attempts == sent - sent_before.get(prompt_key(call.prompt_text), 0)
        else:
            assert call.attempts == sent
    assert sum(len(rows) for rows in after.values()) == fake_provider.total_requests - lost
