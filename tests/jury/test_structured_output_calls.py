"""A judge's structured-output mode on the per-call path: a server that refuses the mode ends
the call after one request with a reason that says what to do; the right mode scores."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from jury import execution
from jury.models import JudgeCall
from tests.factories import make_study_with_members
from tests.jury.factories import make_judge, one_item_run
from tests.support.fake_provider import FakeProvider


@pytest.fixture
def study(db):
    return make_study_with_members(n_items=2, n_clinicians=2, k=2).study


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("MEDHELM_JUDGE_KEY_FAKE", "sk-test-not-a-secret")


def test_a_server_refusing_the_mode_gets_one_request_and_the_call_says_what_to_do(study):
    with FakeProvider(dialect="llama_cpp") as fake:
        judge = make_judge(fake)  # the default mode: json_schema; max_attempts 4
        run = one_item_run(study, judge)
        status = execution.execute_call(call_id=run.calls.get().pk, sleep=lambda s: None)
        requests = fake.total_requests
    call = run.calls.get()
    assert status == JudgeCall.Status.PROVIDER_ERROR
    assert requests == 1 and call.attempts == 1
    assert "structured-output mode 'json_schema'" in call.error
    assert "test connection" in call.error and "not retried" in call.error


def test_the_servers_own_mode_scores(study):
    with FakeProvider(dialect="llama_cpp", follows_prompt=False) as fake:
        judge = make_judge(fake, structured_output="json_object_schema")
        run = one_item_run(study, judge)
        status = execution.execute_call(call_id=run.calls.get().pk)
        sent = fake.last_request.body["response_format"]
    assert status == JudgeCall.Status.OK
    assert sent["type"] == "json_object" and "schema" in sent
    assert run.calls.get().scores.filter(is_valid=True).count() == study.criteria.count()


def test_a_mode_its_provider_lacks_is_refused_when_saved_and_when_called(study, fake_provider):
    judge = make_judge(fake_provider, provider="anthropic", structured_output="json_schema")
    with pytest.raises(ValidationError) as info:
        judge.full_clean()
    assert "structured_output" in info.value.message_dict
    run = one_item_run(study, judge)
    assert execution.execute_call(call_id=run.calls.get().pk) == JudgeCall.Status.PROVIDER_ERROR
    assert "does not apply to provider 'anthropic'" in run.calls.get().error
    assert fake_provider.total_requests == 0


def test_the_old_params_switch_is_refused_with_the_field_to_use(db, fake_provider):
    judge = make_judge(fake_provider, params={"structured_output": False})
    with pytest.raises(ValidationError) as info:
        judge.full_clean()
    assert "structured-output mode field" in info.value.message_dict["params"][0]
