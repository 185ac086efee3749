"""Provider failures as ProviderErrors that say whether retrying helps, the key never shown."""

from __future__ import annotations

import socket
import time

import pytest

from jury.providers import (
    BadRequest,
    ConnectionFailed,
    MalformedResponse,
    ProviderTimeout,
    RateLimited,
    ServerError,
    client_for,
)
from tests.jury.providers.factories import (
    API_KEY,
    PROTOCOLS,
    assert_key_hidden,
    failure,
    make_client,
    make_request,
)
from tests.support.fake_provider import FakeProvider


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
