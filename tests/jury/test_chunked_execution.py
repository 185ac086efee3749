"""Chunks of calls on the worker's event loop (jury.execution.execute_calls), with the
limits in Redis: every status path, the cache, claims held by other workers, cancel, and
the HTTP session the engine sends with (aiohttp), and the requests it sends: the same
as the SDKs' (per-call path)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from decimal import Decimal

import pytest

from jury import execution, limits, services
from jury.models import JudgeScore, JuryRun
from tests.conftest import require_service
from tests.factories import make_study_with_members
from tests.jury.test_runs import make_judge, one_item_run

REDIS_URL = "redis://127.0.0.1:6379/13"

pytestmark = pytest.mark.redis


@pytest.fixture(autouse=True)
def redis_limits(settings, monkeypatch):
    require_service("Redis", "127.0.0.1", 6379)
    name = f"test-chunks:{uuid.uuid4().hex[:10]}:"
    settings.JURY_LIMITER = "redis"
    settings.JURY_LIMITER_REDIS_URL = REDIS_URL
    settings.JURY_LIMITER_PREFIX = name
    monkeypatch.setenv("FAKE_PROVIDER_KEY", "sk-test-not-a-secret")
    yield name
    execution.stop_engine()
    limits.stop_redis_limiter()
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"{name}*"))
    if keys:
        client.delete(*keys)


@pytest.fixture
def study(db):
    return make_study_with_members(n_items=4, n_clinicians=2, k=2).study


def ids(run: JuryRun) -> list[int]:
    return list(run.calls.order_by("pk").values_list("pk", flat=True))


def test_a_chunk_scores_every_call_once_on_both_protocols(study, fake_provider):
    gpt = make_judge(fake_provider, name="gpt", max_concurrency=2)
    claude = make_judge(fake_provider, name="claude", provider="anthropic", max_concurrency=2)
    fake_provider.latency_seconds = 0.05
    run = services.start_run(study=study, judges=[gpt, claude], actor=None, dispatch=False)
    counts = execution.execute_calls(call_ids=ids(run))
    assert counts == {"pending": 0, "ok": 8}
    run.refresh_from_db()
    assert run.status == "finished" and run.started_at and run.finished_at
    for c in run.calls.all():
        assert (c.status, c.attempts) == ("ok", 1) and c.latency_ms is not None
        assert c.cost == (
            Decimal(c.input_tokens) * Decimal("2.5") + Decimal(c.output_tokens) * 10
        ) / Decimal(1_000_000)
        assert c.scores.filter(is_valid=True).count() == 3
    assert fake_provider.total_requests == 8
    assert fake_provider.max_in_flight <= 4  # two judges, two each
    assert set(fake_provider.per_prompt_hash.values()) == {2}  # each prompt, once per judge
    # the request the provider saw is the one the per-call path sends
    sent = [r for r in fake_provider.requests if r.protocol == "openai"]
    assert {r.body["temperature"] for r in sent} == {0}
    assert {r.headers["authorization"] for r in sent} == {"Bearer sk-test-not-a-secret"}


@pytest.mark.parametrize(
    "script,status,attempts",
    [
        (["429", "ok"], "ok", 2),
        (["500", "503", "ok"], "ok", 3),
        (["malformed", "ok"], "ok", 2),
        (["truncated", "ok"], "ok", 2),
        (["500", "500", "500", "500"], "provider_error", 4),
        (["400"], "provider_error", 1),
        (["401"], "provider_error", 1),
        (["refuse"], "refused", 1),
        (["bad_verdict"], "invalid_verdict", 1),
        (["echo"], "invalid_verdict", 1),
    ],
)
def test_every_status_path(study, fake_provider, script, status, attempts):
    judge = make_judge(fake_provider)
    run = one_item_run(study, judge)
    fake_provider.retry_after_seconds = 0
    fake_provider.enqueue(*script)
    assert execution.execute_calls(call_ids=ids(run)) == {"pending": 0, status: 1}
    call = run.calls.get()
    assert (call.status, call.attempts) == (status, attempts), call.error
    assert fake_provider.total_requests == attempts
    if status == "invalid_verdict":
        assert not call.scores.filter(is_valid=True).exists() and call.raw_output
    if status == "provider_error":
        assert call.cost is None and "sk-test-not-a-secret" not in call.error


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("keyed", [True, False])
def test_the_engine_sends_what_the_per_call_path_sends(study, fake_provider, provider, keyed):
    """The engine sends with aiohttp what the SDK's client sends on the per-call path: the
    same URL, body and protocol headers (auth, API version); no auth header without a key."""
    judge = make_judge(fake_provider, provider=provider, api_key_env="FAKE_PROVIDER_KEY" * keyed)
    first, second = study.items.order_by("pk")[:2]
    one = services.start_run(
        study=study, judges=[judge], actor=None, filters={"item_ids": [first.pk]}, dispatch=False
    )
    execution.execute_call(call_id=one.calls.get().pk)
    other = services.start_run(
        study=study, judges=[judge], actor=None, filters={"item_ids": [second.pk]}, dispatch=False
    )
    assert execution.execute_calls(call_ids=ids(other)) == {"pending": 0, "ok": 1}
    sdk_request, engine_request = fake_provider.requests
    assert engine_request.path == sdk_request.path
    assert engine_request.protocol == sdk_request.protocol == provider

    def without_prompt(body: dict) -> dict:
        return {k: v for k, v in body.items() if k != "messages"}

    assert without_prompt(engine_request.body) == without_prompt(sdk_request.body)
    assert [m["role"] for m in engine_request.body["messages"]] == [
        m["role"] for m in sdk_request.body["messages"]
    ]
    protocol_headers = ("authorization", "x-api-key", "anthropic-version", "content-type")
    sent = {h: engine_request.headers.get(h) for h in protocol_headers}
    assert sent == {h: sdk_request.headers.get(h) for h in protocol_headers}
    auth = sent["authorization"] if provider == "openai" else sent["x-api-key"]
    assert auth == (
        {"openai": "Bearer ", "anthropic": ""}[provider] + "sk-test-not-a-secret" if keyed else None
    )


def test_the_wait_a_provider_asks_for_is_honoured(study, fake_provider, monkeypatch):
    from jury.execution import engine

    asked: list[float | None] = []
    original = engine.backoff_seconds

    def recording(attempt, retry_after, rng):
        asked.append(retry_after)
        return original(attempt, retry_after, rng)

    monkeypatch.setattr(engine, "backoff_seconds", recording)
    judge = make_judge(fake_provider)
    run = one_item_run(study, judge)
    fake_provider.retry_after_seconds = 0.3
    fake_provider.enqueue("429", "500", "ok")
    assert execution.execute_calls(call_ids=ids(run)) == {"pending": 0, "ok": 1}
    assert asked == [0.3, None]  # Retry-After on the 429; none on the 500
    call = run.calls.get()
    assert call.attempts == 3


TRICKY_TEXT = "a \"quoted\" \\ back{slash}, NULL\n\tnew line, é ✓ 💊, 'single'"


def tricky_verdict(prompt: str, criteria) -> dict:
    return {key: {"score": high, "explanation": TRICKY_TEXT} for key, _low, high in criteria}


@pytest.mark.parametrize("path", ["chunk", "per call"])
def test_what_the_judge_wrote_is_stored_exactly(study, fake_provider, path):
    """The batched writes (arrays on PostgreSQL, executemany on SQLite) keep every character."""
    fake_provider.verdict_fn = tricky_verdict
    judge = make_judge(fake_provider)
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    if path == "chunk":
        assert execution.execute_calls(call_ids=ids(run)) == {"pending": 0, "ok": 4}
    else:
        for call_id in ids(run):
            assert execution.execute_call(call_id=call_id) == "ok"
    scores = JudgeScore.objects.filter(call__run=run)
    assert scores.count() == 12
    assert {(s.explanation, s.value, s.is_valid) for s in scores} == {(TRICKY_TEXT, 5.0, True)}
    for call in run.calls.all():
        verdict = json.loads(call.raw_output)
        assert {v["explanation"] for v in verdict.values()} == {TRICKY_TEXT}
        assert call.finished_at is not None and call.cost > 0


def test_timeouts_end_as_timeout(study, fake_provider):
    judge = make_judge(fake_provider, timeout_seconds=0.5, params={"max_attempts": 2})
    run = one_item_run(study, judge)
    fake_provider.enqueue("timeout", "timeout")
    execution.execute_calls(call_ids=ids(run))
    call = run.calls.get()
    assert (call.status, call.attempts) == ("timeout", 2)


def test_identical_requests_are_served_from_the_cache(study, fake_provider):
    judge = make_judge(fake_provider)
    first = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    execution.execute_calls(call_ids=ids(first))
    second = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    assert execution.execute_calls(call_ids=ids(second)) == {"pending": 0, "ok": 4}
    assert fake_provider.total_requests == 4
    for c in second.calls.all():
        assert c.cached_from_id and c.cost == 0 and c.scores.filter(is_valid=True).count() == 3
    second.refresh_from_db()
    assert second.status == "finished"
    assert JudgeScore.objects.filter(call__run=second).count() == 12


def test_a_chunk_delivered_twice_changes_nothing(study, fake_provider):
    judge = make_judge(fake_provider)
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    execution.execute_calls(call_ids=ids(run))
    assert execution.execute_calls(call_ids=ids(run)) == {"pending": 0}
    assert fake_provider.total_requests == 4


def test_a_call_another_live_worker_holds_is_waited_for(study, fake_provider):
    """Another worker claimed one call and then died: the chunk runs the others at once and
    that one as soon as the claim lapses; nothing is asked twice."""
    judge = make_judge(fake_provider)
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    call_ids = ids(run)
    other = limits.RedisLimiter(REDIS_URL, limits.key_prefix())
    assert other.claim(claimant=other.claimant("chunk"), call_ids=[call_ids[0]]) == {call_ids[0]}

    def die() -> None:
        time.sleep(0.5)
        other.stop()  # no release: its heartbeat ends and its owner key lapses (at once)

    killer = threading.Thread(target=die)
    killer.start()
    try:
        counts = execution.execute_calls(call_ids=call_ids)
    finally:
        killer.join()
    assert counts == {"pending": 0, "ok": 4}
    assert fake_provider.total_requests == 4


def test_a_cancelled_run_leaves_its_calls_pending(study, fake_provider):
    judge = make_judge(fake_provider)
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    services.cancel_run(run=run, actor=None)
    assert execution.execute_calls(call_ids=ids(run)) == {"pending": 4}
    assert fake_provider.total_requests == 0
    assert services.resume_run(run=run, actor=None, dispatch=False) == 4
    assert execution.execute_calls(call_ids=ids(run)) == {"pending": 0, "ok": 4}
    run.refresh_from_db()
    assert run.status == "finished"


def test_dispatch_sends_chunks_when_the_limits_live_in_redis(study, fake_provider, monkeypatch):
    from jury import tasks

    sent: list[list[int]] = []
    monkeypatch.setattr(tasks.execute_judge_calls, "delay", sent.append)
    monkeypatch.setattr(services, "CALLS_PER_TASK", 3)
    services._dispatch([1, 2, 3, 4, 5, 6, 7])
    assert sent == [[1, 2, 3], [4, 5, 6], [7]]


# --- the HTTP transport ---------------------------------------------------------------------


def run_on_own_loop(coroutine_function):
    """Run a coroutine on a fresh event loop in its own thread, as a worker's engine does:
    in the full suite the browser tests leave Playwright's loop running in this thread."""
    result: list = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            result.append(asyncio.run(coroutine_function()))
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(timeout=60)
    if errors:
        raise errors[0]
    return result[0]


class _OneShotServer:
    """Answers each connection's first request (chunked, with keep-alive announced) and then
    closes it without a word: what a server's idle timeout looks like to a client."""

    def __init__(self) -> None:
        self.connections = 0
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self.thread.start()
        ready.wait()

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(
            next(
                (
                    line.split(b":", 1)[1]
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                b"0",
            )
        )
        await reader.readexactly(length)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: keep-alive\r\n\r\n"
            b'6\r\n{"a": \r\n2\r\n1}\r\n0\r\n\r\n'
        )
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.close()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


def test_transport_reads_chunked_bodies_and_retries_a_connection_closed_while_idle():
    server = _OneShotServer()

    async def run() -> list:
        async with execution.judge_http_session() as session:
            url = f"http://127.0.0.1:{server.port}/v1/chat/completions"
            replies = []
            for x in (1, 2):
                async with session.post(url, json={"x": x}) as response:
                    replies.append(await response.json())
                # the server closes the kept-alive connection meanwhile
                await asyncio.sleep(0.2)
        return replies

    try:
        assert run_on_own_loop(run) == [{"a": 1}, {"a": 1}]
        assert server.connections == 2
    finally:
        server.stop()


def test_transport_keeps_connections_alive(fake_provider):
    opened_before = fake_provider.connections_opened

    async def run() -> None:
        async with execution.judge_http_session() as session:
            for i in range(3):
                async with session.post(
                    f"{fake_provider.openai_url}/chat/completions",
                    json={"model": "m", "messages": [{"role": "user", "content": f"p{i}"}]},
                ) as response:
                    assert response.status == 200
                    await response.read()

    run_on_own_loop(run)
    assert fake_provider.total_requests == 3
    # One connection, kept alive across the three requests.
    assert fake_provider.connections_opened - opened_before == 1


# --- a real worker killed in the middle of a chunk ---------------------------------------------

WORKER_BROKER = "redis://127.0.0.1:6379/14"


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_resume_after_a_worker_is_killed_in_the_middle_of_a_chunk(
    tmp_path, fake_provider, monkeypatch
):
    """The chunk's answers are stored as they come: after a SIGKILL, what was answered stays
    answered (and is not asked again), the calls in flight stay pending, and a resumed chunk
    on a new worker finishes them once the dead worker's slots and claims have lapsed."""
    import os
    import signal

    import redis
    from celery import Celery

    from tests.support.celery_worker import child_pids, running_worker, wait_for
    from tests.support.fake_provider import prompt_key

    redis.Redis.from_url(WORKER_BROKER).flushdb()
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("CELERY_RESULT_BACKEND", raising=False)
    study = make_study_with_members(n_items=12, n_clinicians=2, k=2).study
    judge = make_judge(fake_provider, max_concurrency=2, timeout_seconds=30)
    fake_provider.latency_seconds = 0.6
    env = {"FAKE_PROVIDER_KEY": "sk-test", "JURY_LIMITER": "redis"}

    def send(call_ids: list[int]) -> None:
        client = Celery("test-client", broker=WORKER_BROKER)
        client.send_task("jury.execute_judge_calls", args=[call_ids])
        client.close()

    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    with running_worker(
        broker_url=WORKER_BROKER,
        result_backend=WORKER_BROKER,
        log_path=tmp_path / "w1.log",
        concurrency=1,
        extra_env=env,
    ) as worker:
        send(ids(run))
        wait_for(lambda: run.calls.filter(status="ok").count() >= 3, 90, "three calls done")
        for child in child_pids(worker.pid):
            os.kill(child, signal.SIGKILL)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
    done_before = {c.pk: prompt_key(c.prompt_text) for c in run.calls.filter(status="ok")}
    asked_before = {k: fake_provider.per_prompt_hash[k] for k in done_before.values()}
    assert set(asked_before.values()) == {1}
    assert run.calls.filter(status="pending").exists()
    assert services.resume_run(run=run, actor=None, dispatch=False) > 0
    send(list(run.calls.filter(status="pending").values_list("pk", flat=True)))
    with running_worker(
        broker_url=WORKER_BROKER,
        result_backend=WORKER_BROKER,
        log_path=tmp_path / "w2.log",
        concurrency=1,
        extra_env=env,
    ):
        wait_for(
            lambda: JuryRun.objects.get(pk=run.pk).status == "finished",
            120,
            "the resumed run to finish",
        )
    assert run.calls.filter(status="ok").count() == 12
    for key, n in asked_before.items():
        assert fake_provider.per_prompt_hash[key] == n  # answered before the kill: not again
    assert not run.calls.filter(cost__isnull=True).exists()
    assert not run.calls.filter(cached_from__isnull=False).exists()
