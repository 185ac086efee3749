"""The engine sends, with aiohttp, what the SDK's client sends on the per-call path."""

from __future__ import annotations

import pytest

from jury import execution, services
from tests.jury.factories import call_ids, make_judge

pytestmark = [pytest.mark.redis, pytest.mark.usefixtures("chunk_limits")]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("keyed", [True, False])
def test_the_engine_sends_what_the_per_call_path_sends(study, fake_provider, provider, keyed):
    """The engine sends with aiohttp what the SDK's client sends on the per-call path: the
    same URL, body and protocol headers (auth, API version); no auth header without a key."""
    judge = make_judge(
        fake_provider, provider=provider, api_key_env="MEDHELM_JUDGE_KEY_FAKE" * keyed
    )
    first, second = study.items.order_by("pk")[:2]
    one = services.start_run(
        study=study, judges=[judge], actor=None, filters={"item_ids": [first.pk]}, dispatch=False
    )
    execution.execute_call(call_id=one.calls.get().pk)
    other = services.start_run(
        study=study, judges=[judge], actor=None, filters={"item_ids": [second.pk]}, dispatch=False
    )
    assert execution.execute_calls(call_ids=call_ids(other)) == {"pending": 0, "ok": 1}
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
