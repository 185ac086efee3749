"""The FakeProvider server: scripting, counters, lifecycle, and the routing of each request
to its protocol's reply (after the request's latency, on the server's event loop)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from tests.support.fake_provider.dialects import DIALECTS
from tests.support.fake_provider.replies import (
    DEFAULT_CRITERIA,
    OUTCOMES,
    Criteria,
    Exchange,
    Reply,
    VerdictFn,
    anthropic_reply,
    hashed_verdict,
    json_reply,
    openai_reply,
    prompt_key,
    user_prompt,
)
from tests.support.fake_provider.wire import Connection


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


class FakeProvider:
    """The fake judge server; see the package docstring for what it answers."""

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
        dialect: str = "openai",
        follows_prompt: bool = True,
        served_models: Sequence[str] | None = None,
    ) -> None:
        if dialect not in DIALECTS:
            raise ValueError(f"unknown dialect {dialect!r}; known: {DIALECTS}")
        self.dialect = dialect
        self.follows_prompt = follows_prompt
        self.served_models = None if served_models is None else list(served_models)
        for outcome in failure_outcomes:
            self._check(outcome)
        self.latency_seconds = latency_seconds
        self.verdict_fn = verdict_fn
        self.failure_rate = failure_rate
        self.failure_outcomes = tuple(failure_outcomes)
        self.retry_after_seconds = retry_after_seconds
        self.timeout_sleep_seconds = timeout_sleep_seconds
        self.default_criteria = list(default_criteria)
        self.rng = random.Random(seed)
        # Counters are written on the server's loop and read (or reset) from test threads.
        self.lock = threading.Lock()
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
        self.connections: set[Connection] = set()  # open client connections

    # --- scripting -------------------------------------------------------------------
    @staticmethod
    def _check(outcome: str) -> None:
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r}; known: {OUTCOMES}")

    def enqueue(self, *outcomes: str) -> None:
        """Outcomes for the next requests, consumed in order."""
        for outcome in outcomes:
            self._check(outcome)
        with self.lock:
            self._script.extend(outcomes)

    def add_rule(self, substring: str, outcome: str) -> None:
        """Every request whose user prompt contains `substring` gets `outcome`."""
        self._check(outcome)
        with self.lock:
            self._rules.append((substring, outcome))

    def reset(self) -> None:
        with self.lock:
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
        """Serve on a free port, or, started again after `stop()`, on the same one (a provider
        coming back after an outage)."""
        port = self._address[1] if self._address is not None else 0
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        failed: list[BaseException] = []

        def serve() -> None:
            asyncio.set_event_loop(loop)
            try:
                server = loop.run_until_complete(
                    loop.create_server(
                        lambda: Connection(self),
                        "127.0.0.1",
                        port,
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
        closed, as when a provider goes away, and are no longer counted in flight; new
        connections are refused until `start()`."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        done = asyncio.run_coroutine_threadsafe(self._close_connections(), loop)
        with contextlib.suppress(Exception):
            done.result(timeout=5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)

    async def _close_connections(self) -> None:
        for conn in list(self.connections):
            conn.abort()

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- connections (called by wire.Connection) ---------------------------------------
    def connected(self, conn: Connection) -> None:
        self.connections.add(conn)
        self.connections_opened += 1

    def disconnected(self, conn: Connection) -> None:
        self.connections.discard(conn)

    def abandoned(self, exchange: Exchange) -> None:
        """A request whose connection closed before it was answered."""
        self.end_exchange(exchange)

    # --- per request (hooks for subclasses) ------------------------------------------------
    def begin_exchange(
        self, protocol: str, path: str, headers: dict[str, str], body: dict
    ) -> Exchange:
        model = str(body.get("model", ""))
        prompt = user_prompt(body)
        with self.lock:
            index = self.total_requests
            self.total_requests += 1
            if self._script:
                outcome = self._script.popleft()
            else:
                outcome = next((o for s, o in self._rules if s in prompt), None)
                if outcome is None and self.failure_rate and self.rng.random() < self.failure_rate:
                    outcome = self.rng.choice(self.failure_outcomes)
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

    def end_exchange(self, exchange: Exchange) -> None:
        """The request is answered (or abandoned): no longer in flight."""
        with self.lock:
            self.in_flight -= 1

    def on_response(self, exchange: Exchange, status: int, data: Any) -> None:
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
    def handle(
        self,
        conn: Connection,
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
        if method == "GET" and path.endswith("/models") and self.served_models is not None:
            listing = [{"id": m, "object": "model", "owned_by": "fake"} for m in self.served_models]
            conn.send(json_reply(200, {"object": "list", "data": listing}), keep_alive)
            return
        if method != "POST":
            conn.send(json_reply(405, {"error": {"message": f"no {method} here"}}), keep_alive)
            return
        if path.endswith("/chat/completions"):
            protocol = "openai"
        elif path.endswith("/messages"):
            protocol = "anthropic"
        else:
            error = {"error": {"message": f"no route {path}", "type": "not_found"}}
            conn.send(json_reply(404, error), keep_alive)
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            error = {"error": {"message": "body is not JSON", "type": "invalid_json"}}
            conn.send(json_reply(400, error), keep_alive)
            return
        exchange = self.begin_exchange(protocol, path, headers, body)
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
        self, conn: Connection, exchange: Exchange, body: dict, headers: dict, keep_alive: bool
    ) -> None:
        conn.timer = None
        conn.exchange = None
        try:
            build = openai_reply if exchange.protocol == "openai" else anthropic_reply
            reply = build(self, exchange, body, headers)
            if reply.data is not None:
                self.on_response(exchange, reply.status, reply.data)
            conn.send(reply, keep_alive)
        finally:
            # Right after the write: the client cannot have read this answer (and sent its
            # next request) while the request still counts as in flight.
            self.end_exchange(exchange)
