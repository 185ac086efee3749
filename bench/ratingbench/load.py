"""The load generator's HTTP/1.1 client: asyncio streams, stdlib only, keep-alive or a new
connection per request, Content-Length or chunked bodies, cookies."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass


class HttpError(Exception):
    pass


@dataclass
class Response:
    status: int
    headers: dict[str, list[str]]
    body: bytes

    def header(self, name: str) -> str:
        values = self.headers.get(name, [])
        return values[-1] if values else ""


class Connection:
    """One keep-alive connection; reconnects when the server closed it between requests."""

    keepalive = True  # False: "Connection: close", a new TCP connection per request

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.cookies: dict[str, str] = {}

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    def encode(self, method: str, path: str, headers: dict[str, str] | None, body: bytes) -> bytes:
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        hdrs = {"Accept": "*/*", "User-Agent": "bench_rating", **(headers or {})}
        if not self.keepalive:
            hdrs["Connection"] = "close"
        if self.cookies:
            hdrs["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if body or method in ("POST", "PUT"):
            hdrs["Content-Length"] = str(len(body))
        lines += [f"{k}: {v}" for k, v in hdrs.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    async def request(
        self, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b""
    ) -> Response:
        raw = self.encode(method, path, headers, body)
        for attempt in range(2):
            reused = self.writer is not None
            if not reused:
                self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            assert self.reader is not None and self.writer is not None
            try:
                self.writer.write(raw)
                await self.writer.drain()
                status_line = await self.reader.readline()
                if not status_line:
                    raise ConnectionResetError("server closed the connection")
            except (ConnectionError, asyncio.IncompleteReadError):
                self.close()
                if reused and attempt == 0:
                    continue  # a keep-alive connection the server had closed: once more
                raise
            return await self._read_rest(status_line)
        raise HttpError("unreachable")

    async def _read_rest(self, status_line: bytes) -> Response:
        assert self.reader is not None
        parts = status_line.decode("latin-1").split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            self.close()
            raise HttpError(f"bad status line {status_line!r}")
        status = int(parts[1])
        headers = await self._read_headers()
        body = await self._read_body(headers)
        for cookie in headers.get("set-cookie", []):
            name, _, rest = cookie.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        if parts[0] == "HTTP/1.0" or "close" in ",".join(headers.get("connection", [])).lower():
            self.close()
        return Response(status, headers, body)

    async def _read_headers(self) -> dict[str, list[str]]:
        assert self.reader is not None
        headers: dict[str, list[str]] = {}
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                return headers
            name, _, value = line.decode("latin-1").partition(":")
            headers.setdefault(name.strip().lower(), []).append(value.strip())

    async def _read_body(self, headers: dict[str, list[str]]) -> bytes:
        assert self.reader is not None
        if "content-length" in headers:
            return await self.reader.readexactly(int(headers["content-length"][-1]))
        if "chunked" in ",".join(headers.get("transfer-encoding", [])).lower():
            return await self._read_chunked()
        body = await self.reader.read()
        self.close()
        return body

    async def _read_chunked(self) -> bytes:
        assert self.reader is not None
        chunks = []
        while True:
            size = int((await self.reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while (await self.reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(chunks)
            chunks.append(await self.reader.readexactly(size))
            await self.reader.readline()
