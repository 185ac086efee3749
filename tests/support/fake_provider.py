"""A real HTTP server that speaks the OpenAI chat-completions and Anthropic Messages protocols.

Tests and benchmarks point the real SDK clients at it (base URL `f"{url}/v1"` for OpenAI,
`url` for Anthropic), so every byte goes through httpx, the SDK's error mapping and ours.

Behaviour is scriptable per call. The outcome of a request is, in order of precedence:
1. the next entry of the script queue (`enqueue("429", "ok", ...)`), if any;
2. the first rule whose substring occurs in the user prompt (`add_rule("item-7", "500")`);
3. with `failure_rate` > 0, a seeded random failure drawn from `failure_outcomes`;
4. "ok".

Outcomes: "ok" (a verdict for the criteria in the request's JSON schema or tool, scores from
`verdict_fn`, by default derived from a hash of the prompt), "429" (with Retry-After),
"500", "503", "400", "401" (quoting the API key it received, as real providers echo a masked
key: tests check it is redacted), "malformed" (200 with invalid JSON), "truncated"
(Content-Length larger than the bytes sent, then close), "timeout" (sleep
`timeout_sleep_seconds` before answering), "echo" (the reply is the user prompt verbatim),
"refuse", "content_filter" (OpenAI's finish_reason), "bad_verdict" (the first criterion
scored scale_max + 2, i.e. 7 on 1-5).

Counters: `total_requests`, `per_prompt_hash` (sha256 of the user prompt), `per_model`,
`in_flight` / `max_in_flight`, and `log`: (monotonic time, model, outcome) per request.

The server is a small HTTP/1.1 server (keep-alive, Content-Length or chunked bodies) on an
asyncio event loop in a thread of its own. A thread per connection (http.server) cost more
CPU per request than the judge clients it serves, which made it the bottleneck of the jury
benchmark on two cores; an event loop answers hundreds of requests a second, each waiting
its latency without a thread. Subclasses (bench/bench_jury.py) hook in through `_begin`,
`_end`, `_responded` and `extra_route`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import random
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import pytest

OUTCOMES = (
    "ok",
    "429",
    "500",
    "503",
    "400",
    "401",
    "malformed",
    "truncated",
    "timeout",
    "echo",
    "refuse",
    "content_filter",
    "bad_verdict",
)
DEFAULT_CRITERIA = (("accuracy", 1, 5), ("completeness", 1, 5), ("clarity", 1, 5))
TOOL_NAME = "record_verdict"

Criteria = list[tuple[str, int, int]]
VerdictFn = Callable[[str, Criteria], dict[str, Any]]


def prompt_key(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def hashed_verdict(prompt: str, criteria: Criteria) -> dict[str, Any]:
    """Deterministic scores: the same prompt always gets the same verdict."""
    verdict = {}
    for key, low, high in criteria:
        digest = hashlib.sha256(f"{key}\n{prompt}".encode()).hexdigest()
        verdict[key] = {
            "score": low + int(digest[:8], 16) % (high - low + 1),
            "explanation": f"Fake judge: {key} assessed.",
        }
    return verdict


@dataclass(frozen=True)
class RecordedRequest:
    protocol: str  # "openai" | "anthropic"
    path: str
    headers: dict[str, str]  # lower-cased names
    body: dict[str, Any]
    model: str
    prompt: str
    outcome: str


class LogEntry(NamedTuple):  # a tuple (time, model, outcome) with names
    time: float
    model: str
    outcome: str


@dataclass
class Exchange:
    """One request being answered: what `_begin` decided, handed to `_end` and `_responded`."""

    index: int
    outcome: str
    model: str
    prompt: str
    protocol: str
    extra: dict[str, Any] = field(default_factory=dict)  # for subclasses


@dataclass
class Reply:
    status: int
    payload: bytes
    headers: dict[str, str] = field(default_factory=dict)
    truncated: bool = False  # announce more bytes than sent, then close


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _criteria_from_schema(schema: Any) -> Criteria | None:
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return None
    criteria = []
    for key, prop in schema["properties"].items():
        score = (prop.get("properties") or {}).get("score") or {}
        if "enum" in score:
            low, high = min(score["enum"]), max(score["enum"])
        else:
            low, high = score.get("minimum", 1), score.get("maximum", 5)
        criteria.append((key, int(low), int(high)))
    return criteria


class FakeProvider:
    def __init__(
        self,
        *,
        latency_seconds: float | Sequence[float] | Callable[[int], float] = 0.0,
        verdict_fn: VerdictFn = hashed_verdict,
        failure_rate: float = 0.0,
        failure_outcomes: Sequence[str] = ("429", "500"),
        seed: int = 0,
        retry_after_seconds: float = 1,
        timeout_sleep_seconds: float = 30.0,
        default_criteria: Criteria | tuple = DEFAULT_CRITERIA,
        record_limit: int = 10_000,
    ) -> None:
        for outcome in failure_outcomes:
            self._check(outcome)
        self.latency_seconds = latency_seconds
        self.verdict_fn = verdict_fn
        self.failure_rate = failure_rate
        self.failure_outcomes = tuple(failure_outcomes)
        self.retry_after_seconds = retry_after_seconds
        self.timeout_sleep_seconds = timeout_sleep_seconds
        self.default_criteria = list(default_criteria)
        self._rng = random.Random(seed)
        # Counters are written on the server's loop and read (or reset) from test threads.
        self._lock = threading.Lock()
        self._script: deque[str] = deque()
        self._rules: list[tuple[str, str]] = []
        self.requests: deque[RecordedRequest] = deque(maxlen=record_limit)
        self.log: list[LogEntry] = []
        self.total_requests = 0
        self.connections_opened = 0
        self.per_prompt_hash: Counter[str] = Counter()
        self.per_model: Counter[str] = Counter()
        self.per_outcome: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._address: tuple[str, int] | None = None
        self._connections: set[_Connection] = set()

    # --- scripting -------------------------------------------------------------------
    @staticmethod
    def _check(outcome: str) -> None:
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r}; known: {OUTCOMES}")

    def enqueue(self, *outcomes: str) -> None:
        """Outcomes for the next requests, consumed in order."""
        for outcome in outcomes:
            self._check(outcome)
        with self._lock:
            self._script.extend(outcomes)

    def add_rule(self, substring: str, outcome: str) -> None:
        """Every request whose user prompt contains `substring` gets `outcome`."""
        self._check(outcome)
        with self._lock:
            self._rules.append((substring, outcome))

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self._rules.clear()
            self.requests.clear()
            self.log.clear()
            self.total_requests = 0
            self.per_prompt_hash.clear()
            self.per_model.clear()
            self.per_outcome.clear()
            self.max_in_flight = self.in_flight

    @property
    def last_request(self) -> RecordedRequest:
        return self.requests[-1]

    # --- lifecycle ---------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._address is not None, "server not started"
        host, port = self._address
        return f"http://{host}:{port}"

    @property
    def openai_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_url(self) -> str:
        return self.url

    def start(self) -> FakeProvider:
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        failed: list[BaseException] = []

        def serve() -> None:
            asyncio.set_event_loop(loop)
            try:
                server = loop.run_until_complete(
                    loop.create_server(
                        lambda: _Connection(self),
                        "127.0.0.1",
                        0,
                        backlog=512,  # benchmarks open dozens of connections at once
                        reuse_address=True,
                    )
                )
            except BaseException as exc:  # reported to start()'s caller
                failed.append(exc)
                ready.set()
                return
            self._address = server.sockets[0].getsockname()[:2]
            ready.set()
            try:
                loop.run_forever()
            finally:
                server.close()
                loop.run_until_complete(server.wait_closed())
                loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=serve, name="fake-provider", daemon=True)
        self._thread.start()
        ready.wait()
        if failed:
            raise failed[0]
        return self

    def stop(self) -> None:
        """Stop serving: requests still sleeping (latency, "timeout") end with the connection
        closed, as when a provider goes away, and are no longer counted in flight."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        done = asyncio.run_coroutine_threadsafe(self._close_connections(), loop)
        with contextlib.suppress(Exception):
            done.result(timeout=5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)

    async def _close_connections(self) -> None:
        for conn in list(self._connections):
            conn.abort()

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- per request (hooks for subclasses) ------------------------------------------------
    def _begin(self, protocol: str, path: str, headers: dict[str, str], body: dict) -> Exchange:
        model = str(body.get("model", ""))
        prompt = _user_prompt(body)
        with self._lock:
            index = self.total_requests
            self.total_requests += 1
            if self._script:
                outcome = self._script.popleft()
            else:
                outcome = next((o for s, o in self._rules if s in prompt), None)
                if outcome is None and self.failure_rate and self._rng.random() < self.failure_rate:
                    outcome = self._rng.choice(self.failure_outcomes)
                outcome = outcome or "ok"
            self.per_prompt_hash[prompt_key(prompt)] += 1
            self.per_model[model] += 1
            self.per_outcome[outcome] += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.log.append(LogEntry(time.monotonic(), model, outcome))
            self.requests.append(
                RecordedRequest(protocol, path, headers, body, model, prompt, outcome)
            )
        return Exchange(index, outcome, model, prompt, protocol)

    def _end(self, exchange: Exchange) -> None:
        """The request is answered (or abandoned): no longer in flight."""
        with self._lock:
            self.in_flight -= 1

    def _responded(self, exchange: Exchange, status: int, data: Any) -> None:
        """Called with the decoded response just before it is written (e.g. to count what a
        provider bills: a 200 that carries usage)."""

    def extra_route(
        self, method: str, path: str, body: bytes
    ) -> tuple[int, bytes] | None:  # pragma: no cover - for subclasses
        """Answer a request outside the two protocols (status, JSON bytes), or None."""
        return None

    def _latency(self, index: int) -> float:
        latency = self.latency_seconds
        if callable(latency):
            return float(latency(index))
        if isinstance(latency, int | float):
            return float(latency)
        return float(latency[index]) if index < len(latency) else 0.0

    # --- HTTP --------------------------------------------------------------------------------
    def _handle(
        self,
        conn: _Connection,
        method: str,
        target: str,
        headers: dict[str, str],
        raw: bytes,
        keep_alive: bool,
    ) -> None:
        """Answer one request now, or after the latency (a timer on the loop, no thread)."""
        path = urlsplit(target).path
        extra = self.extra_route(method, path, raw)
        if extra is not None:
            conn.send(Reply(extra[0], extra[1]), keep_alive)
            return
        if method != "POST":
            conn.send(_json_reply(405, {"error": {"message": f"no {method} here"}}), keep_alive)
            return
        if path.endswith("/chat/completions"):
            protocol = "openai"
        elif path.endswith("/messages"):
            protocol = "anthropic"
        else:
            error = {"error": {"message": f"no route {path}", "type": "not_found"}}
            conn.send(_json_reply(404, error), keep_alive)
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            error = {"error": {"message": "body is not JSON", "type": "invalid_json"}}
            conn.send(_json_reply(400, error), keep_alive)
            return
        exchange = self._begin(protocol, path, headers, body)
        delay = self._latency(exchange.index)
        if exchange.outcome == "timeout":
            delay += self.timeout_sleep_seconds
        conn.exchange = exchange
        args = (conn, exchange, body, headers, keep_alive)
        if delay > 0:
            conn.timer = asyncio.get_running_loop().call_later(delay, self._answer, *args)
        else:
            self._answer(*args)

    def _answer(
        self, conn: _Connection, exchange: Exchange, body: dict, headers: dict, keep_alive: bool
    ) -> None:
        conn.timer = None
        conn.exchange = None
        try:
            if exchange.protocol == "openai":
                reply = self._openai(exchange, body, headers)
            else:
                reply = self._anthropic(exchange, body, headers)
            conn.send(reply, keep_alive)
        finally:
            # Right after the write: the client cannot have read this answer (and sent its
            # next request) while the request still counts as in flight.
            self._end(exchange)

    # --- the two protocols -------------------------------------------------------------------
    def _reply(self, exchange: Exchange, status: int, data: Any, **headers: str) -> Reply:
        self._responded(exchange, status, data)
        return _json_reply(status, data, headers)

    def _error(self, exchange: Exchange, headers: dict) -> Reply | None:
        """The error response for an error outcome; None when the outcome is no error."""
        status = {"429": 429, "500": 500, "503": 503, "400": 400, "401": 401}.get(exchange.outcome)
        if status is None:
            return None
        kind, message = {
            429: ("rate_limit_error", "Rate limit reached for requests."),
            500: ("api_error", "The server had an error while processing your request."),
            503: ("overloaded_error", "The engine is currently overloaded."),
            400: ("invalid_request_error", "Invalid value for 'temperature'."),
            401: ("authentication_error", "Incorrect API key provided: "),
        }[status]
        if status == 401:
            key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix(
                "Bearer "
            )
            message += key
        extra = {"Retry-After": str(self.retry_after_seconds)} if status == 429 else {}
        if exchange.protocol == "openai":
            data = {"error": {"message": message, "type": kind, "param": None, "code": None}}
        else:
            data = {"type": "error", "error": {"type": kind, "message": message}}
        return self._reply(exchange, status, data, **extra)

    def _verdict(self, prompt: str, criteria: Criteria, bad: bool) -> dict:
        verdict = self.verdict_fn(prompt, criteria)
        if bad and criteria:
            key, _low, high = criteria[0]
            verdict[key] = {"score": high + 2, "explanation": "Out of scale."}
        return verdict

    def _openai(self, exchange: Exchange, body: dict, headers: dict) -> Reply:
        outcome, model, prompt = exchange.outcome, exchange.model, exchange.prompt
        error = self._error(exchange, headers)
        if error is not None:
            return error
        if outcome == "malformed":
            payload = b'{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [{"ind'
            return Reply(200, payload)
        fmt = body.get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema") if isinstance(fmt, dict) else None
        criteria = _criteria_from_schema(schema) or self.default_criteria
        content: str | None
        refusal = None
        finish = "stop"
        if outcome == "echo":
            content = prompt
        elif outcome == "refuse":
            content, refusal = None, "I'm sorry, I can't help with that."
        elif outcome == "content_filter":
            content, finish = None, "content_filter"
        else:
            verdict = self._verdict(prompt, criteria, bad=outcome == "bad_verdict")
            content = json.dumps(verdict)
        input_tokens = _tokens(_system_prompt(body) + prompt)
        output_tokens = _tokens(content or refusal or "")
        data = {
            "id": f"chatcmpl-fake{hashlib.sha1(prompt.encode()).hexdigest()[:16]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": refusal},
                    "logprobs": None,
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": input_tokens,
                "completion_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
            },
            "system_fingerprint": "fp_fake",
        }
        if outcome == "truncated":
            return _truncated(data)
        return self._reply(exchange, 200, data, **{"x-request-id": f"req_{time.monotonic_ns()}"})

    def _anthropic(self, exchange: Exchange, body: dict, headers: dict) -> Reply:
        outcome, model, prompt = exchange.outcome, exchange.model, exchange.prompt
        error = self._error(exchange, headers)
        if error is not None:
            return error
        if outcome == "malformed":
            return Reply(200, b'{"id": "msg_broken", "type": "message", "content": [{"ty')
        tools = body.get("tools") or []
        tool = next((t for t in tools if t.get("name") == TOOL_NAME), tools[0] if tools else None)
        criteria = (
            _criteria_from_schema(tool.get("input_schema")) if tool else None
        ) or self.default_criteria
        msg_id = f"msg_fake{hashlib.sha1(prompt.encode()).hexdigest()[:20]}"
        if outcome == "echo":
            content = [{"type": "text", "text": prompt}]
            stop = "end_turn"
        elif outcome in ("refuse", "content_filter"):
            content = [{"type": "text", "text": "I can't help with that."}]
            stop = "refusal"
        else:
            verdict = self._verdict(prompt, criteria, bad=outcome == "bad_verdict")
            if tool is not None:
                content = [
                    {
                        "type": "tool_use",
                        "id": f"toolu_{msg_id[8:]}",
                        "name": tool["name"],
                        "input": verdict,
                    }
                ]
                stop = "tool_use"
            else:
                content = [{"type": "text", "text": json.dumps(verdict)}]
                stop = "end_turn"
        input_tokens = _tokens(_system_prompt(body) + prompt)
        output_tokens = _tokens(json.dumps(content))
        data = {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        }
        if outcome == "truncated":
            return _truncated(data)
        return self._reply(exchange, 200, data, **{"request-id": f"req_{time.monotonic_ns()}"})


def _user_prompt(body: dict) -> str:
    messages = body.get("messages") or []
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _system_prompt(body: dict) -> str:
    system = body.get("system")
    if isinstance(system, str):
        return system
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "system":
            return str(message.get("content", ""))
    return ""


def _json_reply(status: int, data: Any, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, json.dumps(data).encode("utf-8"), dict(headers or {}))


def _truncated(data: Any) -> Reply:
    """A body cut in half under a Content-Length announcing all of it (a dropped connection)."""
    payload = json.dumps(data).encode("utf-8")
    return Reply(200, payload, truncated=True)


def _encode(reply: Reply, keep_alive: bool) -> bytes:
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


class _Connection(asyncio.Protocol):
    """One client connection: HTTP/1.1 requests one after the other (keep-alive), parsed
    from the bytes as they arrive; Content-Length or chunked bodies."""

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
        self.fake._connections.add(self)
        self.fake.connections_opened += 1

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self._next_request()

    def connection_lost(self, exc: Exception | None) -> None:
        self.fake._connections.discard(self)
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
            self.fake._end(exchange)

    def send(self, reply: Reply, keep_alive: bool) -> None:
        assert self.transport is not None
        keep_alive = keep_alive and not reply.truncated
        self.transport.write(_encode(reply, keep_alive))
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
        self.fake._handle(self, *parsed)

    def _parse(self) -> tuple[str, str, dict[str, str], bytes, bool] | None:
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
            body = _dechunk(self.buffer, start)
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


def _dechunk(buffer: bytearray, start: int) -> tuple[bytes, int] | None:
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


@pytest.fixture(name="fake_provider")
def fake_provider_fixture() -> Iterator[FakeProvider]:
    """A started FakeProvider, stopped after the test.

    Registered as `fake_provider`. Import `fake_provider_fixture` (noqa: F401) into a test
    module to use it without ruff's F811 on the parameter; `fake_provider` is the same
    fixture under its own name.
    """
    with FakeProvider(timeout_sleep_seconds=10.0) as server:
        yield server


fake_provider = fake_provider_fixture
