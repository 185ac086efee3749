"""Every request sent for a call is kept as an attempt row, on the per-call path: retries,
a cancel in the middle of a call's retries, a resume, and a call another worker finished
first; a call's attempt count is its rows, and the rows are the requests the provider saw."""

from __future__ import annotations

import random

import pytest

from jury import selectors, services
from jury.execution import execute_call, storage
from jury.execution.attempts import AttemptClock
from jury.models import JudgeCall, JuryRun
from jury.providers import base as providers
from tests.factories import make_study_with_members
from tests.jury.factories import call_ids, make_judge, one_item_run
from tests.support.attempts import assert_rows_are_the_requests


@pytest.fixture
def study(db):
    return make_study_with_members(n_items=4, n_clinicians=2, k=2).study


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("MEDHELM_JUDGE_KEY_FAKE", "sk-test-not-a-secret")


def no_sleep(seconds: float) -> None:
    """Backoff without waiting."""


def run_all(run: JuryRun, sleep=no_sleep) -> None:
    for call_id in call_ids(run):
        execute_call(call_id=call_id, sleep=sleep, rng=random.Random(1))


def history(call: JudgeCall) -> list[tuple]:
    return list(call.attempt_log.order_by("number").values_list("number", "outcome", "http_status"))


def test_every_attempt_is_kept_with_its_outcome_status_and_tokens(study, fake_provider):
    run = one_item_run(study, make_judge(fake_provider))
    fake_provider.enqueue("500", "429", "ok")
    run_all(run)
    call = run.calls.get()
    assert call.status == "ok" and call.attempts == 3
    assert history(call) == [(1, "server_error", 500), (2, "rate_limited", 429), (3, "ok", None)]
    failed, limited, ok = call.attempt_log.order_by("number")
    assert "HTTP 500" in failed.error and failed.input_tokens is None
    assert ok.error == "" and ok.input_tokens > 0 and ok.output_tokens > 0
    assert ok.finish_reason == "stop" and call.finish_reason == "stop"
    assert failed.started_at <= limited.started_at <= ok.started_at
    assert all(a.latency_ms is not None for a in (failed, limited, ok))
    assert_rows_are_the_requests(run, fake_provider)


def test_resume_keeps_the_attempts_and_errors_of_earlier_executions(study, fake_provider):
    run = one_item_run(study, make_judge(fake_provider, params={"max_attempts": 2}))
    fake_provider.enqueue("500", "500", "ok")
    run_all(run)
    call = run.calls.get()
    assert (call.status, call.attempts) == ("provider_error", 2)
    assert services.resume_run(run=run, actor=None, dispatch=False) == 1
    run_all(run)
    call.refresh_from_db()
    assert (call.status, call.attempts) == ("ok", 3)
    assert history(call) == [(1, "server_error", 500), (2, "server_error", 500), (3, "ok", None)]
    assert_rows_are_the_requests(run, fake_provider)
    # the run ended well, and its failures are still there to see
    [reason] = selectors.run_errors(run=run).top
    assert (reason.kind, reason.count) == ("server_error", 2) and "HTTP 500" in reason.reason


def test_a_call_cancelled_between_its_retries_keeps_its_failed_attempts(study, fake_provider):
    judge = make_judge(fake_provider, max_concurrency=1)
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    first, *_ = call_ids(run)
    fake_provider.enqueue("503")

    def meanwhile(seconds: float) -> None:
        """While the first call backs off, the run is cancelled: the call sends no further
        request, though the judge's slot is free (on either limiter), and stays pending."""
        services.cancel_run(run=run, actor=None)

    assert execute_call(call_id=first, sleep=meanwhile) == "pending"
    call = JudgeCall.objects.get(pk=first)
    assert call.attempts == 1 and history(call) == [(1, "server_error", 503)]
    services.resume_run(run=run, actor=None, dispatch=False)
    run_all(run)
    call.refresh_from_db()
    assert (call.status, call.attempts) == ("ok", 2)
    assert history(call) == [(1, "server_error", 503), (2, "ok", None)]
    assert_rows_are_the_requests(run, fake_provider)


def test_attempts_on_a_call_another_worker_finished_first_are_kept(study, fake_provider):
    run = one_item_run(study, make_judge(fake_provider))
    run_all(run)  # "another worker": the call is ok after one request
    call = run.calls.select_related("judge", "run").get()
    clock = AttemptClock()
    late = clock.failed(providers.ServerError("HTTP 502 Bad Gateway", status_code=502), "502")
    saved = storage.save_outcomes(
        [storage.Outcome(call_id=call.pk, status="provider_error", attempts=1, attempt_log=[late])],
        calls={call.pk: call},
        criteria={study.pk: storage.study_criteria(study.pk)},
    )
    assert saved == {}  # the call keeps the other worker's result
    call.refresh_from_db()
    assert (call.status, call.attempts) == ("ok", 2)
    assert history(call) == [(1, "ok", None), (2, "server_error", 502)]


def test_attempt_totals_of_a_run_are_the_requests_the_provider_saw(study, fake_provider):
    judge = make_judge(fake_provider, params={"max_attempts": 2})
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    fake_provider.enqueue("500", "ok", "429", "429", "400", "malformed", "ok")
    run_all(run)
    services.resume_run(run=run, actor=None, dispatch=False)
    run_all(run)
    assert set(run.calls.values_list("status", flat=True)) == {"ok"}
    assert_rows_are_the_requests(run, fake_provider)
    assert fake_provider.total_requests == 4 + 5  # four calls, five failed attempts


def test_the_admin_shows_a_calls_attempts(admin_client, study, fake_provider):
    run = one_item_run(study, make_judge(fake_provider))
    fake_provider.enqueue("500", "ok")
    run_all(run)
    call = run.calls.get()
    page = admin_client.get(f"/admin/jury/judgecall/{call.pk}/change/").content.decode()
    assert "server_error" in page and "HTTP 500" in page
