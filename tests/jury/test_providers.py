"""The OpenAI-compatible and Anthropic clients against a real local HTTP server.

Every test goes through the real SDK and httpx; only the server is fake. No database.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from jury.providers import (
    BadRequest,
    ConnectionFailed,
    CriterionSpec,
    JudgeClient,
    JudgeRequest,
    MalformedResponse,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    ServerError,
    client_for,
    parse_retry_after,
    verdict_json_schema,
)
from jury.providers.http import HttpReply
from jury.verdicts import parse_verdict
from tests.support.fake_provider import (
    FakeProvider,
    fake_provider_fixture,  # noqa: F401
    hashed_verdict,
)

API_KEY = "sk-test-Zq8u1n7Wf3kLr0PxY2vB"
PROTOCOLS = ("openai", "anthropic")

CRITERIA = (
    CriterionSpec("accuracy", "Accuracy", "Is it correct?", 1, 5, {"1": "Wrong", "5": "Right"}),
    CriterionSpec("completeness", "Completeness", "Is it complete?", 1, 5, {}),
    CriterionSpec("clarity", "Clarity", "Is it clear?", 1, 5, {}),
)


def make_request(prompt: str = "Rate this answer.", **kwargs) -> JudgeRequest:
    kwargs.setdefault("timeout_seconds", 5.0)
    return JudgeRequest(system="You are a judge.", prompt=prompt, criteria=CRITERIA, **kwargs)


def make_client(
    fake: FakeProvider, protocol: str, *, api_key: str | None = API_KEY, **params
) -> JudgeClient:
    endpoint = fake.openai_url if protocol == "openai" else fake.anthropic_url
    return client_for(
        provider=protocol,
        model_id=f"{protocol}-judge",
        endpoint=endpoint,
        api_key=api_key,
        params=params,
    )


def failure(client: JudgeClient, request: JudgeRequest | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        client.complete(request or make_request())
    return info.value


def assert_key_hidden(exc: BaseException) -> None:
    text = "".join(traceback.format_exception(exc)) + repr(exc) + str(exc)
    assert API_KEY not in text
    assert "Zq8u1n7Wf3kLr0PxY2vB" not in text


# --- successful calls ----------------------------------------------------------------


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
def test_plain_mode_sends_no_schema_and_returns_the_text(fake_provider, protocol):
    client = make_client(fake_provider, protocol, structured_output=False)
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


# --- refusals and bad verdicts are replies, not errors --------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_refusal(fake_provider, protocol):
    fake_provider.enqueue("refuse")
    reply = make_client(fake_provider, protocol).complete(make_request())
    assert reply.refused
    assert not reply.structured
    assert not parse_verdict(reply.text, CRITERIA).ok


def test_openai_content_filter_is_a_refusal(fake_provider):
    fake_provider.enqueue("content_filter")
    reply = make_client(fake_provider, "openai").complete(make_request())
    assert reply.refused and reply.finish_reason == "content_filter"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_out_of_scale_score_is_returned_and_fails_parsing(fake_provider, protocol):
    fake_provider.enqueue("bad_verdict")
    reply = make_client(fake_provider, protocol).complete(make_request())
    verdict = parse_verdict(reply.text, CRITERIA)
    assert not verdict.ok
    assert verdict.criteria[0].value == 7 and not verdict.criteria[0].valid


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_echo_judge_reply_never_parses(fake_provider, protocol):
    fake_provider.enqueue("echo")
    request = make_request('Output: {"accuracy": {"score": 5, "explanation": "x"}}')
    reply = make_client(fake_provider, protocol).complete(request)
    assert reply.text == request.prompt
    verdict = parse_verdict(reply.text, CRITERIA)
    assert not verdict.ok and verdict.scores() == {}


# --- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_429_is_rate_limited_with_retry_after(protocol):
    with FakeProvider(retry_after_seconds=7) as fake:
        fake.enqueue("429")
        exc = failure(make_client(fake, protocol))
        assert isinstance(exc, RateLimited)
        assert exc.retryable and exc.status_code == 429
        assert exc.retry_after_seconds == 7
        assert fake.total_requests == 1  # max_retries=0: the SDK did not retry on its own
        assert_key_hidden(exc)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("outcome", ["500", "503"])
def test_5xx_is_server_error(fake_provider, protocol, outcome):
    fake_provider.enqueue(outcome)
    exc = failure(make_client(fake_provider, protocol))
    assert isinstance(exc, ServerError)
    assert exc.retryable and exc.status_code == int(outcome)
    assert fake_provider.total_requests == 1
    assert_key_hidden(exc)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("outcome", ["400", "401"])
def test_4xx_is_bad_request_and_not_retryable(fake_provider, protocol, outcome):
    fake_provider.enqueue(outcome)
    exc = failure(make_client(fake_provider, protocol))
    assert isinstance(exc, BadRequest)
    assert not exc.retryable and exc.status_code == int(outcome)
    assert f"HTTP {outcome}" in str(exc)
    # The fake's 401 body quotes the key it received, as real providers do: redacted.
    assert_key_hidden(exc)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_malformed_body_is_retryable_malformed_response(fake_provider, protocol):
    fake_provider.enqueue("malformed")
    exc = failure(make_client(fake_provider, protocol))
    assert isinstance(exc, MalformedResponse)
    assert exc.retryable and exc.status_code == 200
    assert_key_hidden(exc)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_truncated_body_is_retryable(fake_provider, protocol):
    fake_provider.enqueue("truncated")
    exc = failure(make_client(fake_provider, protocol))
    assert isinstance(exc, ConnectionFailed | MalformedResponse)
    assert exc.retryable
    assert_key_hidden(exc)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_timeout_is_raised_within_the_request_timeout(fake_provider, protocol):
    fake_provider.enqueue("timeout")  # the server sleeps 10 s
    started = time.monotonic()
    exc = failure(make_client(fake_provider, protocol), make_request(timeout_seconds=0.5))
    elapsed = time.monotonic() - started
    assert isinstance(exc, ProviderTimeout) and exc.retryable
    assert 0.4 <= elapsed < 3.0
    assert fake_provider.total_requests == 1
    assert_key_hidden(exc)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_connection_refused_is_connection_failed(protocol):
    with socket.socket() as sock:  # a port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}" + ("/v1" if protocol == "openai" else "")
    client = client_for(provider=protocol, model_id="m", endpoint=endpoint, api_key=API_KEY)
    exc = failure(client)
    assert isinstance(exc, ConnectionFailed) and exc.retryable
    assert_key_hidden(exc)


def test_unknown_provider_is_rejected():
    with pytest.raises(ValueError, match="unknown provider 'imported'"):
        client_for(provider="imported", model_id="m")


# --- concurrency and the fake's own behaviour ---------------------------------------------


def test_concurrent_calls_overlap_and_all_succeed():
    with FakeProvider(latency_seconds=0.2) as fake:
        client = make_client(fake, "openai")
        prompts = [f"item {i}" for i in range(12)]
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=12) as pool:
            replies = list(pool.map(lambda p: client.complete(make_request(p)), prompts))
        elapsed = time.monotonic() - started
    assert all(parse_verdict(r.text, CRITERIA).ok for r in replies)
    assert fake.max_in_flight >= 6
    assert elapsed < 12 * 0.2  # overlapped, not serial
    assert len(fake.per_prompt_hash) == 12 and set(fake.per_prompt_hash.values()) == {1}


def test_rules_script_and_seeded_failures_are_deterministic():
    def run() -> list[str]:
        with FakeProvider(failure_rate=0.3, seed=11) as fake:
            fake.add_rule("always-503", "503")
            fake.enqueue("400")
            client = make_client(fake, "openai")
            for prompt in ["a", "always-503 b"] + [f"p{i}" for i in range(20)]:
                with contextlib.suppress(ProviderError):
                    client.complete(make_request(prompt))
            return [entry.outcome for entry in fake.log]

    first = run()
    assert first[0] == "400" and first[1] == "503"
    assert set(first[2:]) <= {"ok", "429", "500"} and {"429", "500"} & set(first[2:])
    assert run() == first


def test_server_stop_interrupts_a_sleeping_handler():
    fake = FakeProvider(timeout_sleep_seconds=60).start()
    fake.enqueue("timeout")
    client = make_client(fake, "openai")
    errors: list[BaseException] = []

    def call() -> None:
        try:
            client.complete(make_request())
        except ProviderError as exc:
            errors.append(exc)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    while fake.in_flight == 0:
        time.sleep(0.01)
    started = time.monotonic()
    fake.stop()
    thread.join(timeout=10)
    assert time.monotonic() - started < 5
    assert fake.in_flight == 0
    assert len(errors) == 1  # the client saw the connection close, not a hang


# --- helpers ------------------------------------------------------------------------------


def test_parse_retry_after_forms():
    now = 1_700_000_000.0
    date = format_datetime(datetime.fromtimestamp(now, UTC) + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"Retry-After": "12"}) == 12
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"Retry-After": date}, now=now) == pytest.approx(30)
    assert parse_retry_after({"Retry-After": "-3"}) == 0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


def test_verdict_json_schema_is_strict():
    schema = verdict_json_schema(CRITERIA)
    assert schema["required"] == ["accuracy", "completeness", "clarity"]
    assert schema["additionalProperties"] is False
    accuracy = schema["properties"]["accuracy"]
    assert accuracy["required"] == ["score", "explanation"]
    assert accuracy["additionalProperties"] is False
    assert accuracy["properties"]["score"]["type"] == "integer"
    assert (
        accuracy["properties"]["score"]["minimum"],
        accuracy["properties"]["score"]["maximum"],
    ) == (1, 5)
    assert accuracy["properties"]["explanation"] == {"type": "string"}


def test_criterion_spec_validates_and_freezes_anchors():
    anchors = {"1": "bad"}
    spec = CriterionSpec("accuracy", "Accuracy", "", 1, 5, anchors)
    anchors["1"] = "changed"
    assert spec.anchors["1"] == "bad"
    with pytest.raises(TypeError):
        spec.anchors["2"] = "x"  # type: ignore[index]
    with pytest.raises(ValueError):
        CriterionSpec("accuracy", "Accuracy", "", 5, 5, {})
    with pytest.raises(ValueError, match="unique"):
        JudgeRequest(system="", prompt="p", criteria=(spec, spec))


# --- body shapes a real server will not send but proxies and gateways do ------------------


def parse_body(protocol: str, text: str):
    """The reply the client reads in a 200 with body `text` (its plain-HTTP form)."""
    client = client_for(
        provider=protocol, model_id="m", endpoint="http://127.0.0.1:9", api_key=API_KEY
    )
    return client.parse_reply(
        HttpReply(200, {}, text), request=client.build_request(make_request())
    )


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(
    "text",
    [
        '{"error": {"message": "upstream failed for key ' + API_KEY + '"}}',
        "<html><body>502 Bad Gateway</body></html>",
        "[]",
        '{"choices": [], "content": "x"}',
    ],
)
def test_a_200_that_is_not_the_protocol_is_malformed(protocol, text):
    with pytest.raises(MalformedResponse) as info:
        parse_body(protocol, text)
    assert info.value.retryable
    assert_key_hidden(info.value)


def test_openai_content_parts_are_joined():
    body = (
        '{"choices": [{"message": {"role": "assistant", "content": '
        '[{"type": "text", "text": "{\\"a\\": "}, {"type": "text", "text": "1}"}]}, '
        '"finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}'
    )
    reply = parse_body("openai", body)
    assert reply.text == '{"a": 1}' and (reply.input_tokens, reply.output_tokens) == (3, 2)


def test_anthropic_cached_input_tokens_are_counted():
    body = (
        '{"type": "message", "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",'
        ' "usage": {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 4}}'
    )
    reply = parse_body("anthropic", body)
    assert (reply.input_tokens, reply.output_tokens, reply.structured) == (100, 4, False)
