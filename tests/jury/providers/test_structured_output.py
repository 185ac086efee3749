"""A judge's structured-output mode: what each mode sends, on the SDK path and in the plain-HTTP
form the chunk engine sends, against a fake server speaking each server's dialect; a server
that refuses the mode ends the call at once with a reason that says what to do."""

from __future__ import annotations

import copy
import json
import urllib.error
import urllib.request

import pytest

from jury.providers import client_for, verdict_json_schema
from jury.providers.base import ServerError, UnsupportedStructuredOutput
from jury.providers.http import HttpReply, HttpRequest
from jury.providers.structured import names_the_mode
from jury.verdicts import parse_verdict
from tests.jury.providers.factories import CRITERIA, failure, make_client, make_request
from tests.support.fake_provider import FakeProvider

SCHEMA = verdict_json_schema(CRITERIA)
# llama.cpp's grammar ignores minimum/maximum: its mode sends each 1-5 score as an enum.
ENUM_SCHEMA = copy.deepcopy(SCHEMA)
for _criterion in ENUM_SCHEMA["properties"].values():
    _score = _criterion["properties"]["score"]
    del _score["minimum"], _score["maximum"]
    _score["enum"] = [1, 2, 3, 4, 5]

# mode, the dialect of the server it is for, the structured-output fields it sends
WORKING = [
    (
        "json_schema",
        "openai",
        {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "strict": True, "schema": SCHEMA},
            }
        },
    ),
    (
        "json_object_schema",
        "llama_cpp",
        {"response_format": {"type": "json_object", "schema": ENUM_SCHEMA}},
    ),
    ("ollama_format", "ollama", {"format": SCHEMA}),
    ("tgi_grammar", "tgi", {"response_format": {"type": "json", "value": SCHEMA}}),
    ("json_object", "json_object_only", {"response_format": {"type": "json_object"}}),
    ("none", "prompt_only", {}),
]

# mode, dialect, the HTTP status that server answers it with
REFUSED = [
    ("json_schema", "llama_cpp", 500),
    ("json_schema", "tgi", 422),
    ("json_schema", "ollama", 400),
    ("json_schema", "json_object_only", 400),
    ("json_schema", "prompt_only", 400),
    ("json_object_schema", "tgi", 422),
    ("tgi_grammar", "openai", 400),
    ("tgi_grammar", "llama_cpp", 500),
    ("ollama_format", "openai", 400),
    ("json_object", "prompt_only", 400),
]


def fake_server(dialect: str) -> FakeProvider:
    # A model that follows the prompt only for the prompt-only server: elsewhere a reply no
    # constraint holds is prose, so a mode the server ignores shows as no verdict.
    return FakeProvider(dialect=dialect, follows_prompt=dialect == "prompt_only")


def send_http(http: HttpRequest) -> HttpReply:
    """POST the plain-HTTP form as the engine would (its body as JSON, its headers)."""
    request = urllib.request.Request(
        http.url, data=json.dumps(http.body).encode(), headers=dict(http.headers), method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return HttpReply(response.status, dict(response.headers), response.read().decode())
    except urllib.error.HTTPError as exc:
        return HttpReply(exc.code, dict(exc.headers), exc.read().decode(), exc.reason)


@pytest.mark.parametrize("mode, dialect, fields", WORKING)
def test_each_mode_sends_its_fields_and_gets_a_verdict_on_both_paths(mode, dialect, fields):
    request = make_request(max_tokens=300)
    with fake_server(dialect) as fake:
        client = make_client(fake, "openai", structured_output=mode)
        reply = client.complete(request)
        sdk_body = fake.last_request.body
        http = client.build_request(request)
        http_reply = client.parse_reply(send_http(http), request=http)
        http_body = fake.last_request.body

    assert parse_verdict(reply.text, CRITERIA).ok
    assert parse_verdict(http_reply.text, CRITERIA).ok
    assert sdk_body == http_body == client.request_body(request)
    sent = {k: v for k, v in sdk_body.items() if k in ("response_format", "format")}
    assert sent == fields
    assert sdk_body["max_tokens"] == 300 and sdk_body["temperature"] == 0
    assert reply.structured == (mode not in ("json_object", "none"))


def test_the_default_mode_is_openais_json_schema(fake_provider):
    make_client(fake_provider, "openai").complete(make_request())
    assert fake_provider.last_request.body["response_format"]["type"] == "json_schema"


@pytest.mark.parametrize("mode, dialect, status", REFUSED)
def test_a_server_refusing_the_mode_is_not_retried_and_says_what_to_do(mode, dialect, status):
    request = make_request()
    with fake_server(dialect) as fake:
        client = make_client(fake, "openai", structured_output=mode)
        on_sdk = failure(client, request)
        http = client.build_request(request)
        with pytest.raises(UnsupportedStructuredOutput) as on_http:
            client.parse_reply(send_http(http), request=http)
    for error in (on_sdk, on_http.value):
        assert isinstance(error, UnsupportedStructuredOutput)
        assert not error.retryable
        assert error.status_code == status
        assert f"structured-output mode {mode!r}" in str(error)
        assert "test connection" in str(error) and "test_judge" in str(error)


def test_a_mode_the_server_ignores_answers_without_a_verdict():
    """llama.cpp's server ignores Ollama's "format": the reply is whatever the model says,
    which is why the connection test checks that the probe parses."""
    with fake_server("llama_cpp") as fake:
        reply = make_client(fake, "openai", structured_output="ollama_format").complete(
            make_request()
        )
    assert not parse_verdict(reply.text, CRITERIA).ok


def test_a_500_that_does_not_name_the_mode_is_still_retried(fake_provider):
    fake_provider.enqueue("500")
    error = failure(make_client(fake_provider, "openai", structured_output="json_schema"))
    assert isinstance(error, ServerError) and error.retryable


@pytest.mark.parametrize(
    "mode, status, message, named",
    [
        ("json_schema", 500, "response_format.type: Input should be 'text'", True),
        ("json_schema", 400, "JSON schema features not supported by xgrammar", True),
        ("json_schema", 503, "response_format backend overloaded", False),  # transient
        ("json_schema", 429, "json_schema requests are rate limited", False),
        ("none", 400, "response_format is not supported", False),  # none was sent
        ("ollama_format", 400, "unsupported response_format, use format", True),
        ("ollama_format", 400, "unsupported response_format", False),
        ("tgi_grammar", 422, "Grammar is not supported", True),
        ("tool", 400, "tool_choice: forced tool use is not supported", True),
        ("json_schema", 400, "Invalid value for 'temperature'.", False),
    ],
)
def test_which_errors_name_the_mode(mode, status, message, named):
    assert names_the_mode(mode, status=status, message=message) is named


def test_anthropic_modes_are_the_forced_tool_or_the_prompt(fake_provider):
    tool = make_client(fake_provider, "anthropic", structured_output="tool")
    tool.complete(make_request())
    assert fake_provider.last_request.body["tool_choice"]["name"] == "record_verdict"
    make_client(fake_provider, "anthropic", structured_output="none").complete(make_request())
    assert "tools" not in fake_provider.last_request.body


@pytest.mark.parametrize(
    "provider, mode", [("anthropic", "json_schema"), ("openai", "tool"), ("local", "none")]
)
def test_a_mode_the_provider_lacks_is_refused(provider, mode):
    with pytest.raises(ValueError, match=r"structured-output|grammar"):
        client_for(provider=provider, model_id="m", endpoint="", structured_output=mode)
