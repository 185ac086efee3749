"""Concurrent calls, and the fake provider's own behaviour: scripts, rules, seeded failures, stop."""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from jury.providers import ProviderError
from jury.verdicts import parse_verdict
from tests.jury.providers.factories import CRITERIA, make_client, make_request
from tests.support.fake_provider import FakeProvider
from tests.support.threads import in_background


def test_concurrent_calls_overlap_and_all_succeed():
    with FakeProvider(latency_seconds=0.2) as fake:
        client = make_client(fake, "openai")
        prompts = [f"item {i}" for i in range(12)]
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=12) as pool:
            replies = list(pool.map(lambda p: client.complete(make_request(p)), prompts))
        elapsed = time.monotonic() - started
    assert all(parse_verdict(r.text, CRITERIA).ok for r in replies)
    assert fake.max_in_flight >= 6
    assert elapsed < 12 * 0.2  # overlapped, not serial
    assert len(fake.per_prompt_hash) == 12 and set(fake.per_prompt_hash.values()) == {1}


def test_rules_script_and_seeded_failures_are_deterministic():
    def run() -> list[str]:
        with FakeProvider(failure_rate=0.3, seed=11) as fake:
            fake.add_rule("always-503", "503")
            fake.enqueue("400")
            client = make_client(fake, "openai")
            for prompt in ["a", "always-503 b"] + [f"p{i}" for i in range(20)]:
                with contextlib.suppress(ProviderError):
                    client.complete(make_request(prompt))
            return [entry.outcome for entry in fake.log]

    first = run()
    assert first[0] == "400" and first[1] == "503"
    assert set(first[2:]) <= {"ok", "429", "500"} and {"429", "500"} & set(first[2:])
    assert run() == first


def test_server_stop_interrupts_a_sleeping_handler():
    fake = FakeProvider(timeout_sleep_seconds=60).start()
    fake.enqueue("timeout")
    client = make_client(fake, "openai")
    # the client sees the connection close, not a hang
    with (
        pytest.raises(ProviderError),
        in_background(lambda: client.complete(make_request()), timeout=10),
    ):
        while fake.in_flight == 0:
            time.sleep(0.01)
        started = time.monotonic()
        fake.stop()
    assert time.monotonic() - started < 5
    assert fake.in_flight == 0
