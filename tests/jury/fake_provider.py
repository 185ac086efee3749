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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._script: deque[str] = deque()
        self._rules: list[tuple[str, str]] = []
        self.requests: deque[RecordedRequest] = deque(maxlen=record_limit)
        self.log: list[LogEntry] = []
        self.total_requests = 0
        self.per_prompt_hash: Counter[str] = Counter()
        self.per_model: Counter[str] = Counter()
        self.per_outcome: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

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
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_url(self) -> str:
        return self.url

    def start(self) -> FakeProvider:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler, bind_and_activate=False)
        server.daemon_threads = True
        server.request_queue_size = 256  # benchmarks open dozens of connections at once
        server.allow_reuse_address = True
        server.server_bind()
        server.server_activate()
        server.fake = self  # type: ignore[attr-defined]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # wakes handlers sleeping for latency or "timeout"
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- per request ---------------------------------------------------------------------
    def _begin(self, protocol: str, path: str, headers: dict[str, str], body: dict) -> tuple:
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
        return index, outcome, model, prompt

    def _end(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _latency(self, index: int) -> float:
        latency = self.latency_seconds
        if callable(latency):
            return float(latency(index))
        if isinstance(latency, int | float):
            return float(latency)
        return float(latency[index]) if index < len(latency) else 0.0

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server stops; True when the full time passed."""
        return not self._stop.wait(seconds) if seconds > 0 else True


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


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: every response carries Content-Length
    timeout = 10  # idle keep-alive connections end, so handler threads do not linger
    server_version = "FakeProvider/1.0"

    def setup(self) -> None:
        super().setup()
        # Headers and body are written separately; without TCP_NODELAY, Nagle's algorithm
        # and the client's delayed ACK add ~40 ms to every response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # quiet in tests
        pass

    def do_POST(self) -> None:
        fake: FakeProvider = self.server.fake  # type: ignore[attr-defined]
        path = urlsplit(self.path).path
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if path.endswith("/chat/completions"):
            protocol = "openai"
        elif path.endswith("/messages"):
            protocol = "anthropic"
        else:
            self._json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._json(400, {"error": {"message": "body is not JSON", "type": "invalid_json"}})
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        index, outcome, model, prompt = fake._begin(protocol, path, headers, body)
        try:
            if not fake._sleep(fake._latency(index)):
                self.close_connection = True
                return
            if outcome == "timeout" and not fake._sleep(fake.timeout_sleep_seconds):
                self.close_connection = True
                return
            if protocol == "openai":
                self._openai(fake, outcome, body, model, prompt, headers)
            else:
                self._anthropic(fake, outcome, body, model, prompt, headers)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (its timeout)
        finally:
            fake._end()

    # --- writing ---------------------------------------------------------------------------
    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(data).encode("utf-8"), headers)

    def _truncated(self, data: Any) -> None:
        payload = json.dumps(data).encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload) + 100))
        self.end_headers()
        self.wfile.write(payload[: len(payload) // 2])
        self.wfile.flush()
        self.close_connection = True
        with contextlib.suppress(OSError):  # the client may have gone already
            self.connection.shutdown(socket.SHUT_RDWR)

    def _error(self, fake: FakeProvider, protocol: str, outcome: str, headers: dict) -> bool:
        """Write the error response for an error outcome; False when `outcome` is no error."""
        status = {"429": 429, "500": 500, "503": 503, "400": 400, "401": 401}.get(outcome)
        if status is None:
            return False
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
        extra = {"Retry-After": str(fake.retry_after_seconds)} if status == 429 else {}
        if protocol == "openai":
            data = {"error": {"message": message, "type": kind, "param": None, "code": None}}
        else:
            data = {"type": "error", "error": {"type": kind, "message": message}}
        self._json(status, data, extra)
        return True

    def _verdict(self, fake: FakeProvider, prompt: str, criteria: Criteria, bad: bool) -> dict:
        verdict = fake.verdict_fn(prompt, criteria)
        if bad and criteria:
            key, _low, high = criteria[0]
            verdict[key] = {"score": high + 2, "explanation": "Out of scale."}
        return verdict

    def _openai(self, fake, outcome, body, model, prompt, headers) -> None:
        if self._error(fake, "openai", outcome, headers):
            return
        if outcome == "malformed":
            payload = b'{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [{"ind'
            self._send(200, payload)
            return
        fmt = body.get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema") if isinstance(fmt, dict) else None
        criteria = _criteria_from_schema(schema) or fake.default_criteria
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
            verdict = self._verdict(fake, prompt, criteria, bad=outcome == "bad_verdict")
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
            self._truncated(data)
        else:
            self._json(200, data, {"x-request-id": f"req_{time.monotonic_ns()}"})

    def _anthropic(self, fake, outcome, body, model, prompt, headers) -> None:
        if self._error(fake, "anthropic", outcome, headers):
            return
        if outcome == "malformed":
            self._send(200, b'{"id": "msg_broken", "type": "message", "content": [{"ty')
            return
        tools = body.get("tools") or []
        tool = next((t for t in tools if t.get("name") == TOOL_NAME), tools[0] if tools else None)
        criteria = (
            _criteria_from_schema(tool.get("input_schema")) if tool else None
        ) or fake.default_criteria
        msg_id = f"msg_fake{hashlib.sha1(prompt.encode()).hexdigest()[:20]}"
        if outcome == "echo":
            content = [{"type": "text", "text": prompt}]
            stop = "end_turn"
        elif outcome in ("refuse", "content_filter"):
            content = [{"type": "text", "text": "I can't help with that."}]
            stop = "refusal"
        else:
            verdict = self._verdict(fake, prompt, criteria, bad=outcome == "bad_verdict")
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
            self._truncated(data)
        else:
            self._json(200, data, {"request-id": f"req_{time.monotonic_ns()}"})


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
