"""A chunk of calls on the worker's event loop (jury.execution.execute_calls) ends every call
as the per-call path does: each status, retries and the wait a provider asks for, timeouts,
and what the judge wrote stored exactly."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from jury import execution, services
from jury.models import JudgeScore
from tests.jury.factories import call_ids, make_judge, one_item_run

pytestmark = [pytest.mark.redis, pytest.mark.usefixtures("chunk_limits")]


def test_a_chunk_scores_every_call_once_on_both_protocols(study, fake_provider):
    gpt = make_judge(fake_provider, name="gpt", max_concurrency=2)
    claude = make_judge(fake_provider, name="claude", provider="anthropic", max_concurrency=2)
    fake_provider.latency_seconds = 0.05
    run = services.start_run(study=study, judges=[gpt, claude], actor=None, dispatch=False)
    counts = execution.execute_calls(call_ids=call_ids(run))
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
    assert execution.execute_calls(call_ids=call_ids(run)) == {"pending": 0, status: 1}
    call = run.calls.get()
    assert (call.status, call.attempts) == (status, attempts), call.error
    assert fake_provider.total_requests == attempts
    if status == "invalid_verdict":
        assert not call.scores.filter(is_valid=True).exists() and call.raw_output
    if status == "provider_error":
        assert call.cost is None and "sk-test-not-a-secret" not in call.error


def test_the_wait_a_provider_asks_for_is_honoured(study, fake_provider, monkeypatch):
    from jury.execution import retries

    asked: list[float | None] = []
    original = retries.backoff_seconds

    def recording(attempt, retry_after, rng):
        asked.append(retry_after)
        return original(attempt, retry_after, rng)

    monkeypatch.setattr(retries, "backoff_seconds", recording)
    judge = make_judge(fake_provider)
    run = one_item_run(study, judge)
    fake_provider.retry_after_seconds = 0.3
    fake_provider.enqueue("429", "500", "ok")
    assert execution.execute_calls(call_ids=call_ids(run)) == {"pending": 0, "ok": 1}
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
        assert execution.execute_calls(call_ids=call_ids(run)) == {"pending": 0, "ok": 4}
    else:
        for call_id in call_ids(run):
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
    execution.execute_calls(call_ids=call_ids(run))
    call = run.calls.get()
    assert (call.status, call.attempts) == ("timeout", 2)
