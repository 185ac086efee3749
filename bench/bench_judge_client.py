"""CPU per judge request on the worker's event loop: the engine's client against the official
SDK's async client, on the same fake provider, in one run.

    .venv/bin/python bench/bench_judge_client.py [--requests 1000] [--in-flight 48]
        [--latency 0.1] [--protocol openai|anthropic|both]

The baseline is the SDK with its DefaultAioHttpClient; replies are checked identical before
any figure is printed. Procedure: bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from _support import ROOT, django_setup

os.environ.setdefault("DJANGO_DEBUG", "1")  # settings only: nothing here touches a database

API_KEY = "sk-bench-not-a-secret"
CRITERIA = (("accuracy", "Accuracy"), ("completeness", "Completeness"), ("clarity", "Clarity"))
SERVE = """
import sys, threading
sys.path.insert(0, {root!r})
from tests.support.fake_provider import FakeProvider
server = FakeProvider(latency_seconds={latency}, seed=0).start()
print(server.url, flush=True)
sys.stdin.read()  # until the bench closes the pipe
server.stop()
"""


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def run_round(
    send: Callable[[Any], Awaitable[Any]], requests: list[Any], in_flight: int
) -> tuple[float, float, list[str]]:
    """(CPU seconds, wall seconds, reply texts) for all requests, `in_flight` at a time."""
    gate = asyncio.Semaphore(in_flight)
    texts: list[str] = [""] * len(requests)

    async def one(i: int) -> None:
        async with gate:
            texts[i] = (await send(requests[i])).text

    cpu0, wall0 = cpu_seconds(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(len(requests))))
    return cpu_seconds() - cpu0, time.perf_counter() - wall0, texts


def judge_and_requests(protocol: str, url: str, n: int) -> tuple[Any, list[Any]]:
    """An unsaved judge on the fake provider, and `n` requests, each with its own prompt."""
    from jury.models import Judge
    from jury.providers import base as providers

    judge = Judge(
        name=f"bench-{protocol}",
        provider=protocol,
        model_id=f"bench-{protocol}",
        endpoint=f"{url}/v1" if protocol == "openai" else url,
        api_key_env="BENCH_JUDGE_CLIENT_KEY",
        params={"max_tokens": 512},
        timeout_seconds=30,
    )
    specs = tuple(
        providers.CriterionSpec(key, label, f"{label} of the answer.", 1, 5)
        for key, label in CRITERIA
    )
    requests = [
        providers.JudgeRequest(
            system="You are a medical expert grading an answer.",
            prompt=f"Case {i}: " + "A patient presents with a cough and fever. " * 60,
            criteria=specs,
            max_tokens=512,
            timeout_seconds=30,
        )
        for i in range(n)
    ]
    return judge, requests


def sdk_clients(protocol: str, endpoint: str) -> dict[str, Any]:
    """The official SDK's async client, with aiohttp (the baseline) and with httpx."""
    import anthropic
    import openai

    sdks: dict[str, Any] = {}
    for transport in ("httpx", "aiohttp"):
        sdk = openai if protocol == "openai" else anthropic
        http_client = sdk.DefaultAioHttpClient() if transport == "aiohttp" else None
        if protocol == "openai":
            sdks[transport] = openai.AsyncOpenAI(
                base_url=endpoint, api_key=API_KEY, max_retries=0, http_client=http_client
            )
        else:
            sdks[transport] = anthropic.AsyncAnthropic(
                base_url=endpoint, api_key=API_KEY, max_retries=0, http_client=http_client
            )
    return sdks


def through_sdk(sdk_client: Any, sync: Any, protocol: str) -> Callable[[Any], Awaitable[Any]]:
    """Send a request through the SDK client with the judge's body and reply parsing."""
    create = (
        sdk_client.chat.completions.with_raw_response.create
        if protocol == "openai"
        else sdk_client.messages.with_raw_response.create
    )

    async def send(request: Any) -> Any:
        body = sync.request_body(request)
        raw = await create(**body, timeout=request.timeout_seconds)
        return sync.parse_body(raw.http_response.text, body=body)

    return send


async def best_of_two(
    clients: dict[str, Callable[[Any], Awaitable[Any]]], requests: list[Any], in_flight: int
) -> tuple[dict[str, tuple[float, float]], dict[str, list[str]]]:
    """After a warm-up, two rounds per client: (best (CPU, wall) by client, replies by client)."""
    # Warm-up: imports, connections, the SDKs' lazy models.
    for send in clients.values():
        await run_round(send, requests[: in_flight * 2], in_flight)
    best: dict[str, tuple[float, float]] = {}
    replies: dict[str, list[str]] = {}
    for _ in range(2):
        for name, send in clients.items():
            cpu, wall, texts = await run_round(send, requests, in_flight)
            if name not in best or cpu < best[name][0]:
                best[name] = (cpu, wall)
            replies[name] = texts
    return best, replies


async def compare(protocol: str, url: str, n: int, in_flight: int) -> dict[str, Any]:
    """CPU of the three clients on the same requests; stops if their verdicts differ."""
    from jury.execution.clients import AsyncProvider

    judge, requests = judge_and_requests(protocol, url, n)
    engine_client = AsyncProvider(judge, API_KEY)
    sync = engine_client.sync  # the judge's own client: request body and reply parsing
    sdks = sdk_clients(protocol, judge.endpoint)
    clients = {
        "SDK, DefaultAioHttpClient": through_sdk(sdks["aiohttp"], sync, protocol),  # baseline
        "SDK, default httpx client": through_sdk(sdks["httpx"], sync, protocol),
        "engine client": engine_client.complete,
    }
    best, replies = await best_of_two(clients, requests, in_flight)
    for sdk_client in sdks.values():
        await sdk_client.close()
    await engine_client.aclose()
    baseline, *others = replies.values()
    differing = sum(
        json.loads(a) != json.loads(b)
        for texts in others
        for a, b in zip(baseline, texts, strict=True)
    )
    if differing:
        raise SystemExit(f"{protocol}: {differing} of {n} replies differ between the two clients")
    return {"protocol": protocol, "best": best}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--in-flight", type=int, default=48)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--protocol", choices=("openai", "anthropic", "both"), default="both")
    args = parser.parse_args()

    django_setup()
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE.format(root=str(ROOT), latency=args.latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = (server.stdout.readline() if server.stdout else "").strip()
        if not url.startswith("http"):
            raise SystemExit(f"the fake provider did not start: {url!r}")
        protocols = ("openai", "anthropic") if args.protocol == "both" else (args.protocol,)
        print(
            f"{args.requests:,} requests per round, {args.in_flight} in flight, provider latency "
            f"{args.latency * 1000:.0f} ms; CPU of this process, best of 2 rounds"
        )
        for protocol in protocols:
            result = asyncio.run(compare(protocol, url, args.requests, args.in_flight))
            base_cpu = next(iter(result["best"].values()))[0]
            for name, (cpu, wall) in result["best"].items():
                print(
                    f"  {protocol:9s} {name:26s} {1000 * cpu / args.requests:6.2f} ms CPU a request"
                    f"  (wall {wall:5.2f} s)  baseline / this: {base_cpu / cpu:5.1f}x"
                )
            print(f"  {protocol:9s} replies of the three clients identical, prompt by prompt")
    finally:
        if server.stdin:
            server.stdin.close()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
