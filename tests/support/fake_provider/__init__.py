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
scored scale_max + 2, i.e. 7 on 1-5), "max_tokens" (the output cut at max_tokens: finish_reason
"length" / stop_reason "max_tokens", the verdict cut short), "max_tokens_whole" (the same
finish reason, the verdict whole).

Dialects (`dialect=`, tests/support/fake_provider/dialects.py): which structured-output
request fields the server takes, as OpenAI, llama-cpp-python's server, Ollama, TGI, a JSON-mode
only or a prompt-only server would; `follows_prompt=False` makes a reply no constraint held
prose instead of the verdict. `served_models=[...]` answers GET /v1/models with those ids.

Lifecycle: `stop()` then `start()` plays an outage (connections refused meanwhile; the
server comes back on the same port).

Counters: `total_requests`, `per_prompt_hash` (sha256 of the user prompt), `per_model`,
`in_flight` / `max_in_flight`, and `log`: (monotonic time, model, outcome) per request.

Modules: server (FakeProvider), replies (the protocols' bodies), wire (HTTP/1.1 on an
asyncio event loop in a thread of its own: each request waits its latency without a thread,
so the server costs little CPU next to the clients it serves). Subclasses
(bench/bench_jury.py) hook in through `begin_exchange`, `end_exchange`, `on_response` and `extra_route`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fake_provider.dialects import DIALECTS
from tests.support.fake_provider.replies import (
    DEFAULT_CRITERIA,
    OUTCOMES,
    TOOL_NAME,
    Exchange,
    Reply,
    hashed_verdict,
    prompt_key,
)
from tests.support.fake_provider.server import FakeProvider, LogEntry, RecordedRequest

__all__ = [
    "DEFAULT_CRITERIA",
    "DIALECTS",
    "OUTCOMES",
    "TOOL_NAME",
    "Exchange",
    "FakeProvider",
    "LogEntry",
    "RecordedRequest",
    "Reply",
    "fake_provider",
    "fake_provider_fixture",
    "hashed_verdict",
    "prompt_key",
]


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
