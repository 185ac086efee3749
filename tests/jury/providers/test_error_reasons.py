"""A provider's error is kept as its status and a short reason: the provider's own message,
redacted and cut short, and nothing else of a remote body (an HTML page, a debug dump)."""

from __future__ import annotations

import json

import pytest

from jury.providers import MalformedResponse, ServerError
from jury.providers.base import status_error
from tests.jury.providers.factories import (
    API_KEY,
    PROTOCOLS,
    assert_key_hidden,
    make_client,
    make_request,
)
from tests.support.fake_provider import FakeProvider

HTML_PAGE = "<html><body><h1>502</h1><pre>" + "upstream 10.1.2.3:8443 refused\n" * 400


class RawReplies(FakeProvider):
    """Answers every request with the status and body given."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__()
        self.reply = (status, body.encode())

    def extra_route(self, method, path, body):
        return self.reply


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_html_error_page_keeps_only_the_status(protocol):
    with RawReplies(502, HTML_PAGE) as fake, pytest.raises(ServerError) as info:
        make_client(fake, protocol).complete(make_request())
    message = str(info.value)
    assert info.value.status_code == 502 and "HTTP 502" in message
    assert "not kept" in message and "10.1.2.3" not in message and "<html" not in message
    assert len(message) < 300


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_provider_message_is_kept_redacted_and_short(protocol):
    body = json.dumps(
        {
            "error": {"message": f"bad key {API_KEY} " + "x" * 5000, "type": "api_error"},
            "trace": "internal detail " * 100,
        }
    )
    with RawReplies(500, body) as fake, pytest.raises(ServerError) as info:
        make_client(fake, protocol).complete(make_request())
    message = str(info.value)
    assert "HTTP 500" in message and "bad key [redacted]" in message
    assert "internal detail" not in message and len(message) < 350
    assert_key_hidden(info.value)


@pytest.mark.parametrize(
    "body,kept",
    [
        ('{"error": "model not loaded"}', "model not loaded"),  # Ollama, TGI
        ('{"object": "error", "message": "context too long"}', "context too long"),  # vLLM
        ('{"detail": "secret internals"}', "not kept"),
        ("[" * 100_000, "not kept"),  # nested too deep to parse: no message
    ],
    ids=["ollama", "vllm", "other-json", "deep-nesting"],
)
def test_the_message_of_other_servers(body, kept):
    exc = status_error(400, {}, body, label="judge", secret=None, reason="Bad Request")
    assert kept in str(exc) and "internals" not in str(exc)


def test_control_characters_and_a_long_reason_phrase_are_cut():
    exc = status_error(
        500,
        {},
        '{"error": {"message": "a\\r\\nb\\u202ec"}}',
        label="j",
        secret=None,
        reason="R" * 500,
    )
    assert "\r" not in str(exc) and "\n" not in str(exc) and "\u202e" not in str(exc)
    assert "R" * 61 not in str(exc)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_malformed_2xx_body_is_not_kept(protocol):
    fake = RawReplies(200, "<html>proxy page with 10.9.8.7 inside</html>")
    with fake, pytest.raises(MalformedResponse) as info:
        make_client(fake, protocol).complete(make_request())
    assert "10.9.8.7" not in str(info.value) and "not kept" in str(info.value)
