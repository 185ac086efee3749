"""The fake provider's own process: tests.support.fake_provider.FakeProvider plus /bench/
routes to configure it between phases and to read what it saw and billed. A process of its
own, so that its CPU does not compete with a worker's GIL. Needs the project on sys.path."""

from __future__ import annotations

import json
import random
import signal
import threading
import time
from collections import Counter
from typing import Any

from tests.support import fake_provider as fp

# A row of BenchProvider.per_key, by position: what the bench's accounting reads.
REQUESTS, OK, ERRORS, BILLED, TOKENS_IN, TOKENS_OUT = range(6)


class BenchProvider(fp.FakeProvider):
    """Counts per (model, prompt) and requests in flight per model, through the server's
    hooks for subclasses; POST /bench/config, POST /bench/reset, GET /bench/stats."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.in_flight_by_model: Counter[str] = Counter()
        self.max_in_flight_by_model: Counter[str] = Counter()
        # (model, sha256 of the user prompt) -> [requests, ok outcomes, error outcomes,
        # 200 responses with usage (billed), input tokens billed, output tokens billed]
        self.per_key: dict[tuple[str, str], list[int]] = {}
        self.first_request: float | None = None
        self.last_response: float | None = None

    def begin_exchange(self, protocol: str, path: str, headers: dict, body: dict) -> fp.Exchange:
        exchange = super().begin_exchange(protocol, path, headers, body)
        model = exchange.model
        key = (model, fp.prompt_key(exchange.prompt))
        exchange.extra["key"] = key
        with self.lock:
            self.in_flight_by_model[model] += 1
            self.max_in_flight_by_model[model] = max(
                self.max_in_flight_by_model[model], self.in_flight_by_model[model]
            )
            row = self.per_key.setdefault(key, [0, 0, 0, 0, 0, 0])
            row[REQUESTS] += 1
            row[OK if exchange.outcome == "ok" else ERRORS] += 1
            if self.first_request is None:
                self.first_request = time.time()
        return exchange

    def end_exchange(self, exchange: fp.Exchange) -> None:
        super().end_exchange(exchange)
        with self.lock:
            self.in_flight_by_model[exchange.model] -= 1
            self.last_response = time.time()

    def on_response(self, exchange: fp.Exchange, status: int, data: Any) -> None:
        # A 200 carrying usage is what a provider bills.
        if status != 200 or not isinstance(data, dict) or not isinstance(data.get("usage"), dict):
            return
        usage = data["usage"]
        n_in = usage.get("prompt_tokens", usage.get("input_tokens", 0))
        n_out = usage.get("completion_tokens", usage.get("output_tokens", 0))
        with self.lock:
            row = self.per_key[exchange.extra["key"]]
            row[BILLED] += 1
            row[TOKENS_IN] += int(n_in)
            row[TOKENS_OUT] += int(n_out)

    def bench_reset(self) -> None:
        self.reset()
        with self.lock:
            self.per_key.clear()
            self.max_in_flight_by_model = Counter(
                {m: n for m, n in self.in_flight_by_model.items() if n}
            )
            self.first_request = self.last_response = None

    def bench_config(self, data: dict[str, Any]) -> None:
        with self.lock:
            self.latency_seconds = float(data.get("latency", self.latency_seconds))
            self.failure_rate = float(data.get("failure_rate", 0.0))
            self.failure_outcomes = tuple(data.get("failure_outcomes", ("429", "500")))
            self.retry_after_seconds = data.get("retry_after", self.retry_after_seconds)
            self.rng = random.Random(int(data.get("seed", 0)))

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {
                "total_requests": self.total_requests,
                "per_outcome": dict(self.per_outcome),
                "per_model": dict(self.per_model),
                "max_in_flight": self.max_in_flight,
                "max_in_flight_by_model": dict(self.max_in_flight_by_model),
                "in_flight": self.in_flight,
                "first_request": self.first_request,
                "last_response": self.last_response,
                "per_key": [[m, k, *row] for (m, k), row in self.per_key.items()],
            }

    def extra_route(self, method: str, path: str, body: bytes) -> tuple[int, bytes] | None:
        if not path.startswith("/bench/"):
            return None
        if method == "GET" and path == "/bench/stats":
            return 200, json.dumps(self.stats()).encode()
        if method != "POST":
            return 404, b"{}"
        if path == "/bench/reset":
            self.bench_reset()
        elif path == "/bench/config":
            self.bench_config(json.loads(body or b"{}"))
        else:
            return 404, b"{}"
        return 200, b"{}"


def serve_fake_provider(params: dict[str, Any]) -> None:
    """Serve a BenchProvider until SIGTERM or SIGINT; its URL goes to stdout first."""
    server = BenchProvider(latency_seconds=float(params["latency"]), seed=int(params["seed"]))
    server.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(f"URL {server.url}", flush=True)
    stop.wait()
    server.stop()
