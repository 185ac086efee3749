"""A judge's request never follows a redirect: the endpoint's host is the one the operator
allowed, and a redirect elsewhere (with the key, or to an internal address whose answer
would be stored) fails as the status it is, on the SDK path and on the engine's."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from jury.execution.clients import AsyncProvider
from jury.models import Judge
from jury.providers import BadRequest, client_for
from tests.jury.providers.factories import API_KEY, PROTOCOLS, make_request
from tests.support.threads import run_in_threads


@pytest.fixture
def redirector(fake_provider) -> Iterator[str]:
    """The URL of a server that answers every POST with 307 to the same path on the fake."""

    class Redirect(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(307)
            self.send_header("Location", fake_provider.url + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def endpoint_of(url: str, protocol: str) -> str:
    return f"{url}/v1" if protocol == "openai" else url


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_sdk_path_does_not_follow_a_redirect(redirector, fake_provider, protocol):
    client = client_for(
        provider=protocol, model_id="m", endpoint=endpoint_of(redirector, protocol), api_key=API_KEY
    )
    with pytest.raises(BadRequest) as info:
        client.complete(make_request())
    assert info.value.status_code == 307 and "HTTP 307" in str(info.value)
    assert fake_provider.total_requests == 0


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_engine_path_does_not_follow_a_redirect(redirector, fake_provider, protocol):
    judge = Judge(
        name="j", provider=protocol, model_id="m", endpoint=endpoint_of(redirector, protocol)
    )

    async def send() -> None:
        provider = AsyncProvider(judge, API_KEY)
        try:
            await provider.complete(make_request())
        finally:
            await provider.aclose()

    # in a thread of its own: the test's thread may already run an event loop
    with pytest.raises(BadRequest) as refused:
        run_in_threads([lambda: asyncio.run(send())], timeout=30)
    assert refused.value.status_code == 307
    assert fake_provider.total_requests == 0
