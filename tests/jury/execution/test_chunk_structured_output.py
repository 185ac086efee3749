"""A judge's structured-output mode on the chunk engine (aiohttp): the same body as the SDK
path, one request to a server that refuses the mode, a score from the server's own mode."""

from __future__ import annotations

import pytest

from jury import execution, services
from jury.models import JudgeCall
from tests.jury.factories import call_ids, make_judge, one_item_run
from tests.support.fake_provider import FakeProvider

pytestmark = [pytest.mark.redis, pytest.mark.usefixtures("chunk_limits")]


def test_a_server_refusing_the_mode_gets_one_request_per_call(study):
    with FakeProvider(dialect="llama_cpp") as fake:
        judge = make_judge(fake)  # the default mode: json_schema
        run = one_item_run(study, judge)
        counts = execution.execute_calls(call_ids=call_ids(run))
        requests = fake.total_requests
    call = run.calls.get()
    assert counts == {"pending": 0, "provider_error": 1}
    assert requests == 1 and call.attempts == 1
    assert "structured-output mode 'json_schema'" in call.error
    assert "test connection" in call.error


@pytest.mark.parametrize(
    "mode, dialect",
    [
        ("json_object_schema", "llama_cpp"),
        ("ollama_format", "ollama"),
        ("tgi_grammar", "tgi"),
        ("json_object", "json_object_only"),
    ],
)
def test_the_servers_own_mode_scores_and_sends_what_the_sdk_path_sends(study, mode, dialect):
    with FakeProvider(dialect=dialect, follows_prompt=False) as fake:
        judge = make_judge(fake, structured_output=mode)
        first, second = study.items.order_by("pk")[:2]
        one = execution_run(study, judge, first)
        assert execution.execute_call(call_id=one.calls.get().pk) == JudgeCall.Status.OK
        other = execution_run(study, judge, second)
        assert execution.execute_calls(call_ids=call_ids(other)) == {"pending": 0, "ok": 1}
        sdk_request, engine_request = fake.requests

    def without_prompt(body: dict) -> dict:
        return {k: v for k, v in body.items() if k != "messages"}

    assert without_prompt(engine_request.body) == without_prompt(sdk_request.body)
    assert other.calls.get().scores.filter(is_valid=True).count() == study.criteria.count()


def execution_run(study, judge, item):
    return services.start_run(
        study=study, judges=[judge], actor=None, filters={"item_ids": [item.pk]}, dispatch=False
    )
