"""What the OpenAI-compatible and Anthropic clients send, and read from a verdict, through the
real SDKs against the fake provider."""

from __future__ import annotations

import pytest

from jury.providers import client_for, verdict_json_schema
from jury.verdicts import parse_verdict
from tests.jury.providers.factories import API_KEY, CRITERIA, PROTOCOLS, make_client, make_request
from tests.support.fake_provider import hashed_verdict


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_ok_verdict_with_tokens(fake_provider, protocol):
    request = make_request("Patient with chest pain. Response: aspirin.")
    reply = make_client(fake_provider, protocol).complete(request)

    verdict = parse_verdict(reply.text, CRITERIA)
    assert verdict.ok, verdict.reason
    expected = hashed_verdict(request.prompt, [(c.key, 1, 5) for c in CRITERIA])
    assert verdict.scores() == {k: v["score"] for k, v in expected.items()}
    assert reply.structured and not reply.refused
    assert reply.input_tokens and reply.input_tokens > 0
    assert reply.output_tokens and reply.output_tokens > 0
    assert reply.finish_reason == ("stop" if protocol == "openai" else "tool_use")
    assert fake_provider.total_requests == 1
    assert fake_provider.per_model == {f"{protocol}-judge": 1}


def test_openai_request_body_carries_sampling_and_schema(fake_provider):
    make_client(fake_provider, "openai").complete(make_request(max_tokens=321))

    sent = fake_provider.last_request
    assert sent.path == "/v1/chat/completions"
    assert sent.body["model"] == "openai-judge"
    assert sent.body["temperature"] == 0
    assert sent.body["max_tokens"] == 321
    assert sent.body["messages"] == [
        {"role": "system", "content": "You are a judge."},
        {"role": "user", "content": "Rate this answer."},
    ]
    assert sent.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "strict": True, "schema": verdict_json_schema(CRITERIA)},
    }
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"


def test_anthropic_request_body_forces_the_verdict_tool(fake_provider):
    make_client(fake_provider, "anthropic").complete(make_request(max_tokens=321))

    sent = fake_provider.last_request
    assert sent.path == "/v1/messages"
    assert sent.body["temperature"] == 0
    assert sent.body["max_tokens"] == 321
    assert sent.body["system"] == "You are a judge."
    assert sent.body["messages"] == [{"role": "user", "content": "Rate this answer."}]
    assert sent.body["tools"][0]["name"] == "record_verdict"
    assert sent.body["tools"][0]["input_schema"] == verdict_json_schema(CRITERIA)
    assert sent.body["tool_choice"] == {"type": "tool", "name": "record_verdict"}
    assert sent.headers["x-api-key"] == API_KEY
    assert "authorization" not in sent.headers
    assert "anthropic-version" in sent.headers


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_prompt_only_mode_sends_no_schema_and_returns_the_text(fake_provider, protocol):
    client = make_client(fake_provider, protocol, structured_output="none")
    reply = client.complete(make_request())

    body = fake_provider.last_request.body
    assert "response_format" not in body and "tools" not in body
    assert not reply.structured
    assert parse_verdict(reply.text, CRITERIA).ok  # the fake answers JSON text


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_no_key_is_sent_when_none_is_given_even_with_the_sdk_env_var_set(
    fake_provider, protocol, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-must-not-leak")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-env-must-not-leak")
    make_client(fake_provider, protocol, api_key=None).complete(make_request())

    headers = fake_provider.last_request.headers
    assert "sk-from-env-must-not-leak" not in repr(headers)
    assert "authorization" not in headers


def test_azure_openai_uses_deployment_path_and_api_key_header(fake_provider):
    client = client_for(
        provider="openai",
        model_id="gpt-4o-deployment",
        endpoint=fake_provider.url,
        api_key=API_KEY,
        params={"api_version": "2024-10-21"},
    )
    reply = client.complete(make_request())

    sent = fake_provider.last_request
    assert sent.path == "/openai/deployments/gpt-4o-deployment/chat/completions"
    assert sent.headers["api-key"] == API_KEY
    assert parse_verdict(reply.text, CRITERIA).ok


def test_max_tokens_param_can_be_renamed_for_reasoning_models(fake_provider):
    client = make_client(fake_provider, "openai", max_tokens_param="max_completion_tokens")
    client.complete(make_request(max_tokens=99))
    body = fake_provider.last_request.body
    assert body["max_completion_tokens"] == 99 and "max_tokens" not in body
