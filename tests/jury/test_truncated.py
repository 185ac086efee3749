"""A reply cut at the judge's max_tokens ends as `truncated` with a hint naming the limit (not
as an unparseable verdict), its finish reason stored; a resume sends it again only once the
judge's request has changed (max_tokens raised)."""

from __future__ import annotations

import io
import random

import pytest

from jury import selectors, services
from jury.execution import execute_call
from jury.models import JudgeCall
from tests.factories import make_study_with_members
from tests.jury.factories import call_ids, make_judge, one_item_run


@pytest.fixture
def study(db):
    return make_study_with_members(n_items=2, n_clinicians=2, k=2).study


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("MEDHELM_JUDGE_KEY_FAKE", "sk-test-not-a-secret")


def run_all(run) -> None:
    for call_id in call_ids(run):
        execute_call(call_id=call_id, sleep=lambda s: None, rng=random.Random(1))


@pytest.mark.parametrize("protocol,finish", [("openai", "length"), ("anthropic", "max_tokens")])
def test_a_reply_cut_at_max_tokens_ends_truncated_with_a_hint(
    study, fake_provider, protocol, finish
):
    judge = make_judge(fake_provider, provider=protocol)
    run = one_item_run(study, judge)
    fake_provider.enqueue("max_tokens")
    run_all(run)
    call = run.calls.get()
    assert call.status == JudgeCall.Status.TRUNCATED and call.get_status_display() == "Truncated"
    assert call.finish_reason == finish and call.attempts == 1
    assert "max_tokens" in call.error and "512" in call.error and judge.name in call.error
    assert "not a JSON object" not in call.error and "missing" not in call.error
    assert call.raw_output and call.cost > 0  # the provider billed the cut reply
    assert not call.scores.filter(is_valid=True).exists()
    assert selectors.run_progress(run=run).failed == 1
    [reason] = selectors.run_errors(run=run).top
    assert reason.kind == "truncated" and reason.count == 1


def test_a_reply_at_max_tokens_whose_verdict_is_whole_is_ok(study, fake_provider):
    run = one_item_run(study, make_judge(fake_provider))
    fake_provider.enqueue("max_tokens_whole")
    run_all(run)
    call = run.calls.get()
    assert (call.status, call.finish_reason, call.error) == ("ok", "length", "")
    assert call.scores.filter(is_valid=True).count() == 3


def test_resume_sends_a_truncated_call_again_only_once_max_tokens_changed(study, fake_provider):
    judge = make_judge(fake_provider)
    run = one_item_run(study, judge)
    fake_provider.enqueue("max_tokens")
    run_all(run)
    # the same request would be cut the same way: nothing to send
    assert services.resume_run(run=run, actor=None, dispatch=False) == 0
    assert run.calls.get().status == "truncated"
    judge.params = {**judge.params, "max_tokens": 2048}
    judge.save()
    assert services.resume_run(run=run, actor=None, dispatch=False) == 1
    run_all(run)
    call = run.calls.get()
    assert (call.status, call.attempts) == ("ok", 2)
    assert fake_provider.last_request.body["max_tokens"] == 2048
    assert list(call.attempt_log.order_by("number").values_list("outcome", flat=True)) == [
        "truncated",
        "ok",
    ]
    # the call now names the request that answered it: a later identical one is a cache hit
    again = one_item_run(study, judge)
    run_all(again)
    assert again.calls.get().cached_from_id == call.pk


def test_a_resume_says_which_truncated_calls_it_left(client, study, fake_provider):
    from django.core.management import call_command

    judge = make_judge(fake_provider, name="gpt")
    run = one_item_run(study, judge)
    fake_provider.enqueue("max_tokens")
    run_all(run)
    client.force_login(study.created_by)
    page = client.post(
        f"/studies/{study.pk}/jury/runs/{run.pk}/resume/", follow=True
    ).content.decode()
    assert "0 calls sent again" in page
    assert "1 truncated calls not sent again" in page and "max_tokens" in page
    out = io.StringIO()
    call_command("run_jury", resume=run.pk, inline=1, stdout=out)
    assert "1 truncated calls not sent again" in out.getvalue()
