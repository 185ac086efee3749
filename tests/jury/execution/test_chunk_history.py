"""The chunk path keeps every attempt as the per-call path does: retries, a call cancelled
while it backs off, a resume, and a reply cut at max_tokens sent through aiohttp."""

from __future__ import annotations

import pytest

from jury import execution, services
from jury.models import JudgeAttempt, JuryRun
from tests.jury.factories import call_ids, make_judge, one_item_run
from tests.support.attempts import assert_rows_are_the_requests
from tests.support.celery_worker import wait_for
from tests.support.threads import in_background

pytestmark = [pytest.mark.redis, pytest.mark.usefixtures("chunk_limits")]


def history(run: JuryRun) -> list[tuple]:
    return list(
        JudgeAttempt.objects.filter(call__run=run)
        .order_by("call", "number")
        .values_list("number", "outcome", "http_status")
    )


def test_every_attempt_of_a_chunk_is_kept(study, fake_provider):
    run = one_item_run(study, make_judge(fake_provider))
    fake_provider.retry_after_seconds = 0
    fake_provider.enqueue("500", "429", "ok")
    assert execution.execute_calls(call_ids=call_ids(run)) == {"pending": 0, "ok": 1}
    assert history(run) == [(1, "server_error", 500), (2, "rate_limited", 429), (3, "ok", None)]
    assert run.calls.get().finish_reason == "stop"
    assert_rows_are_the_requests(run, fake_provider)


def test_resume_keeps_the_attempts_of_the_first_execution(study, fake_provider):
    run = one_item_run(study, make_judge(fake_provider))
    fake_provider.enqueue("400")
    assert execution.execute_calls(call_ids=call_ids(run)) == {"pending": 0, "provider_error": 1}
    services.resume_run(run=run, actor=None, dispatch=False)
    assert execution.execute_calls(call_ids=call_ids(run)) == {"pending": 0, "ok": 1}
    call = run.calls.get()
    assert (call.status, call.attempts) == ("ok", 2)
    assert history(run) == [(1, "bad_request", 400), (2, "ok", None)]
    assert_rows_are_the_requests(run, fake_provider)


@pytest.mark.django_db(transaction=True)
def test_a_call_cancelled_while_it_backs_off_keeps_its_failed_attempt(fake_provider):
    from tests.factories import make_study_with_members

    study = make_study_with_members(n_items=1, n_clinicians=2, k=2).study
    run = one_item_run(study, make_judge(fake_provider))
    fake_provider.retry_after_seconds = 3  # the chunk backs off 3 s: time to cancel
    fake_provider.enqueue("429", "ok")

    def cancel_after_the_first_request() -> None:
        wait_for(lambda: fake_provider.total_requests >= 1, 30, "the first request")
        services.cancel_run(run=run, actor=None)

    with in_background(cancel_after_the_first_request):
        counts = execution.execute_calls(call_ids=call_ids(run))
    assert counts == {"pending": 1}
    call = run.calls.get()
    assert (call.status, call.attempts) == ("pending", 1)
    assert history(run) == [(1, "rate_limited", 429)]
    services.resume_run(run=run, actor=None, dispatch=False)
    assert execution.execute_calls(call_ids=call_ids(run)) == {"pending": 0, "ok": 1}
    assert history(run) == [(1, "rate_limited", 429), (2, "ok", None)]
    assert_rows_are_the_requests(run, fake_provider)


@pytest.mark.parametrize("protocol,finish", [("openai", "length"), ("anthropic", "max_tokens")])
def test_a_reply_cut_at_max_tokens_ends_truncated_on_the_chunk_path(
    study, fake_provider, protocol, finish
):
    run = one_item_run(study, make_judge(fake_provider, provider=protocol))
    fake_provider.enqueue("max_tokens")
    assert execution.execute_calls(call_ids=call_ids(run)) == {"pending": 0, "truncated": 1}
    call = run.calls.get()
    assert call.finish_reason == finish and "max_tokens" in call.error
    assert history(run) == [(1, "truncated", None)]
