"""Refusals and bad verdicts are replies, not errors; and the bodies a real server will not send
but proxies and gateways do."""

from __future__ import annotations

import pytest

from jury.providers import MalformedResponse, client_for
from jury.providers.http import HttpReply
from jury.verdicts import parse_verdict
from tests.jury.providers.factories import (
    API_KEY,
    CRITERIA,
    PROTOCOLS,
    assert_key_hidden,
    make_client,
    make_request,
)


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
