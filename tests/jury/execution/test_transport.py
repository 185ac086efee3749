"""The HTTP session the engine sends with (aiohttp): chunked bodies, a kept-alive connection
the server closed while idle, connections reused."""

from __future__ import annotations

import asyncio
import threading

from jury import execution
from tests.support.threads import run_in_threads


def run_on_own_loop(coroutine_function):
    """Run a coroutine on a fresh event loop in its own thread, as a worker's engine does:
    in the full suite the browser tests leave Playwright's loop running in this thread."""
    return run_in_threads([lambda: asyncio.run(coroutine_function())])[0]


class _OneShotServer:
    """Answers each connection's first request (chunked, with keep-alive announced) and then
    closes it without a word: what a server's idle timeout looks like to a client."""

    def __init__(self) -> None:
        self.connections = 0
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self.thread.start()
        ready.wait()

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(
            next(
                (
                    line.split(b":", 1)[1]
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                b"0",
            )
        )
        await reader.readexactly(length)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: keep-alive\r\n\r\n"
            b'6\r\n{"a": \r\n2\r\n1}\r\n0\r\n\r\n'
        )
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.close()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


def test_transport_reads_chunked_bodies_and_retries_a_connection_closed_while_idle():
    server = _OneShotServer()

    async def run() -> list:
        async with execution.judge_http_session() as session:
            url = f"http://127.0.0.1:{server.port}/v1/chat/completions"
            replies = []
            for x in (1, 2):
                async with session.post(url, json={"x": x}) as response:
                    replies.append(await response.json())
                # the server closes the kept-alive connection meanwhile
                await asyncio.sleep(0.2)
        return replies

    try:
        assert run_on_own_loop(run) == [{"a": 1}, {"a": 1}]
        assert server.connections == 2
    finally:
        server.stop()


def test_transport_keeps_connections_alive(fake_provider):
    opened_before = fake_provider.connections_opened

    async def run() -> None:
        async with execution.judge_http_session() as session:
            for i in range(3):
                async with session.post(
                    f"{fake_provider.openai_url}/chat/completions",
                    json={"model": "m", "messages": [{"role": "user", "content": f"p{i}"}]},
                ) as response:
                    assert response.status == 200
                    await response.read()

    run_on_own_loop(run)
    assert fake_provider.total_requests == 3
    # One connection, kept alive across the three requests.
    assert fake_provider.connections_opened - opened_before == 1
