"""The providers' plain-HTTP form, what the chunk engine sends and reads: the SDK path's
body, the SDK's URL and protocol headers, its status mapping; Azure OpenAI has none."""

from __future__ import annotations

import pytest

from jury.providers import ConnectionFailed, ProviderTimeout, RateLimited, client_for
from jury.providers.http import HttpReply
from tests.jury.providers.factories import API_KEY, PROTOCOLS, assert_key_hidden, make_request

SERVER = "http://127.0.0.1:9"


def client(protocol: str, *, api_key: str | None = API_KEY, **params):
    endpoint = f"{SERVER}/v1" if protocol == "openai" else SERVER
    return client_for(
        provider=protocol, model_id="m", endpoint=endpoint, api_key=api_key, params=params
    )


@pytest.mark.parametrize(
    "protocol,path,auth",
    [
        ("openai", "/v1/chat/completions", ("authorization", f"Bearer {API_KEY}")),
        ("anthropic", "/v1/messages", ("x-api-key", API_KEY)),
    ],
)
def test_the_request_is_the_sdk_paths(protocol, path, auth):
    judge = client(protocol)
    http = judge.build_request(make_request())
    assert http.url == SERVER + path
    assert http.body == judge.request_body(make_request())
    headers = {name.lower(): value for name, value in http.headers.items()}
    assert headers[auth[0]] == auth[1]
    assert headers["content-type"] == "application/json"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_no_auth_header_without_a_key(protocol, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-must-not-leak")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-env-must-not-leak")
    http = client(protocol, api_key=None).build_request(make_request())
    assert not {name.lower() for name in http.headers} & {"authorization", "x-api-key"}
    assert "sk-from-env-must-not-leak" not in repr(http.headers)


def test_azure_openai_has_no_plain_http_form():
    azure = client_for(
        provider="openai",
        model_id="deployment",
        endpoint=SERVER,
        api_key=API_KEY,
        params={"api_version": "2024-10-21"},
    )
    assert azure.build_request(make_request()) is None


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_status_maps_as_on_the_sdk_path(protocol):
    judge = client(protocol)
    answer = HttpReply(429, {"retry-after": "7"}, f"slow down, {API_KEY}", "Too Many Requests")
    with pytest.raises(RateLimited) as info:
        judge.parse_reply(answer, request=judge.build_request(make_request()))
    assert (info.value.status_code, info.value.retry_after_seconds) == (429, 7)
    assert "HTTP 429 Too Many Requests" in str(info.value)
    assert_key_hidden(info.value)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_no_answer_is_a_timeout_or_a_failed_connection(protocol):
    judge = client(protocol)
    assert isinstance(judge.transport_error(TimeoutError()), ProviderTimeout)
    failed = judge.transport_error(ConnectionResetError(f"reset while sending {API_KEY}"))
    assert isinstance(failed, ConnectionFailed) and failed.retryable
    assert "ConnectionResetError" in str(failed)
    assert_key_hidden(failed)
