"""The fake provider's HTTP/1.1 on an asyncio event loop: one protocol object per client
connection (keep-alive, Content-Length or chunked request bodies), and the response bytes."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from http import HTTPStatus
from typing import TYPE_CHECKING

from tests.support.fake_provider.replies import Exchange, Reply

if TYPE_CHECKING:
    from tests.support.fake_provider.server import FakeProvider

# A request as parsed: method, target, headers (lower-cased names), body, keep-alive.
Request = tuple[str, str, dict[str, str], bytes, bool]


def encode(reply: Reply, keep_alive: bool) -> bytes:
    """Status line, headers and body as one write."""
    try:
        reason = HTTPStatus(reply.status).phrase
    except ValueError:
        reason = "Unknown"
    payload = reply.payload
    length = len(payload) + 100 if reply.truncated else len(payload)
    if reply.truncated:
        payload = payload[: len(payload) // 2]
    head = [
        f"HTTP/1.1 {reply.status} {reason}",
        "Server: FakeProvider/1.0",
        "Content-Type: application/json",
        f"Content-Length: {length}",
        *(f"{name}: {value}" for name, value in reply.headers.items()),
    ]
    if not keep_alive:
        head.append("Connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload


class Connection(asyncio.Protocol):
    """One client connection: HTTP/1.1 requests one after the other (keep-alive), parsed
    from the bytes as they arrive; each handed to `FakeProvider.handle`, which answers with
    `send`."""

    MAX_HEAD = 65536

    def __init__(self, fake: FakeProvider) -> None:
        self.fake = fake
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.busy = False  # a request is being answered: the next one waits in the buffer
        self.exchange: Exchange | None = None
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            # Header and body go out in one write, but a delayed ACK must not hold them.
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.fake.connected(self)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self._next_request()

    def connection_lost(self, exc: Exception | None) -> None:
        self.fake.disconnected(self)
        self._drop_pending()

    def abort(self) -> None:
        """stop(): a request still waiting (latency, "timeout") ends with the connection."""
        self._drop_pending()
        if self.transport is not None:
            self.transport.abort()

    def _drop_pending(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.exchange is not None:
            exchange, self.exchange = self.exchange, None
            self.fake.abandoned(exchange)

    def send(self, reply: Reply, keep_alive: bool) -> None:
        assert self.transport is not None
        keep_alive = keep_alive and not reply.truncated
        self.transport.write(encode(reply, keep_alive))
        self.busy = False
        if not keep_alive:
            self.transport.close()  # after the buffered bytes: a cut body ends here
        elif self.buffer:
            self._next_request()

    def _next_request(self) -> None:
        try:
            parsed = self._parse()
        except ValueError:  # garbage: drop the connection
            if self.transport is not None:
                self.transport.close()
            return
        if parsed is None:
            return
        self.busy = True
        self.fake.handle(self, *parsed)

    def _parse(self) -> Request | None:
        """The next complete request in the buffer (taken out of it), or None."""
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > self.MAX_HEAD:
                raise ValueError("request head too long")
            return None
        lines = self.buffer[:end].decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")  # no space before the colon in HTTP/1.1
            headers[name.lower()] = value.strip()
        start = end + 4
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = dechunk(self.buffer, start)
            if body is None:
                return None
            raw, stop = body
        else:
            stop = start + int(headers.get("content-length") or 0)
            if len(self.buffer) < stop:
                return None
            raw = bytes(self.buffer[start:stop])
        del self.buffer[:stop]
        keep_alive = headers.get("connection", "").lower() != "close"
        return method, target, headers, raw, keep_alive


def dechunk(buffer: bytearray, start: int) -> tuple[bytes, int] | None:
    """A chunked body starting at `start`: (body, end offset), or None if incomplete."""
    parts = []
    at = start
    while True:
        line_end = buffer.find(b"\r\n", at)
        if line_end < 0:
            return None
        size = int(bytes(buffer[at:line_end]).split(b";", 1)[0].strip() or b"0", 16)
        at = line_end + 2
        if size == 0:
            # Trailers, if any, end with an empty line.
            while True:
                line_end = buffer.find(b"\r\n", at)
                if line_end < 0:
                    return None
                empty = line_end == at
                at = line_end + 2
                if empty:
                    return b"".join(parts), at
        if len(buffer) < at + size + 2:
            return None
        parts.append(bytes(buffer[at : at + size]))
        at += size + 2
