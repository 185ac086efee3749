"""The jury bench's report: the set-up, then per phase its throughput table, CPU, PostgreSQL
and the verdict of its accounting."""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from typing import Any

from _support import print_table

from jurybench.accounting import accounting
from jurybench.config import WARMUP_ITEMS


def print_header(
    args: argparse.Namespace, judges: list, command: str, load: tuple[float, float], times: dict
) -> None:
    """What ran, on what machine and software, and how long the set-up took."""
    from importlib.metadata import version

    import psycopg

    with psycopg.connect(args.database_url) as conn:
        pg_version = conn.execute("SHOW server_version").fetchone()[0]
    print(
        f"\nbench_jury: {args.items:,} items x {len(judges)} judges "
        f"({', '.join(f'{j.name} [{j.provider}]' for j in judges)}), provider latency "
        f"{1000 * args.latency:g} ms, max_concurrency {args.concurrency} per judge, no RPM limit, "
        "max_attempts 6"
    )
    print(
        f"machine: {os.cpu_count()} cores (os.cpu_count), load average before {load[0]:.2f}, "
        f"after {load[1]:.2f}; shared with other jobs, so figures are noisy"
    )
    print(
        f"software: Python {sys.version.split()[0]}, Django {version('django')}, Celery "
        f"{version('celery')}, openai {version('openai')}, anthropic {version('anthropic')}, "
        f"PostgreSQL {pg_version}, Redis broker {args.redis_url}"
    )
    print(f"workers: {args.workers} x `{command}`, DEBUG off, CONN_MAX_AGE=60")
    print(
        f"setup: create db + migrate {times['setup']:.1f} s (migrate {times['migrate']:.1f} s), "
        f"seed {times['seed']:.1f} s, worker start + warm-up run ({WARMUP_ITEMS} items) "
        f"{times['warm']:.1f} s"
    )


def report_checked_phase(
    result: dict[str, Any], args: argparse.Namespace, judges: list, ideal: float, cached: bool
) -> list[str]:
    """Print a phase's figures and its accounting (or cache check); returns its problems."""
    print()
    found = report_phase(
        result,
        judges=judges,
        concurrency=args.concurrency,
        latency=args.latency,
        wall_ideal=ideal,
        cached=cached,
    )
    lines, acc = accounting(result, judges, expect_cached=cached)
    print(f"{'cache check' if cached else 'accounting'}:")
    for line in lines:
        print(f"  {line}")
    found += acc
    if found:
        print(f"  -> FAILED: {len(found)} discrepancies")
        for p in found:
            print(f"     - {p}")
    elif cached:
        print("  -> all served from the cache, 0 provider requests, cost 0")
    else:
        print("  -> none lost, none billed twice")
    return found


def report_phase(
    result: dict[str, Any],
    *,
    judges: list,
    concurrency: int,
    latency: float,
    wall_ideal: float,
    cached: bool = False,
) -> list[str]:
    """Print one phase's throughput figures; returns problems (limits exceeded, unfinished)."""
    server = result["server"]
    problems = []
    in_flight = {j.model_id: server["max_in_flight_by_model"].get(j.model_id, 0) for j in judges}
    over = {m: n for m, n in in_flight.items() if n > concurrency}
    if over:
        problems.append(f"more requests in flight than allowed: {over} (limit {concurrency})")
    if not result["finished"]:
        problems.append("the run did not finish before the timeout")
    rows = phase_rows(result, in_flight, len(judges), concurrency, latency, wall_ideal, cached)
    print_table(["phase: " + result["name"], "value"], rows)
    print(timeline(result))
    print_cpu(result)
    print_postgres(result)
    return problems


def ratio_text(ratio: float, cached: bool) -> str:
    if cached:
        return f"{ratio:.2f} (no provider call: for scale only)"
    return f"{ratio:.2f}" + (" met" if ratio <= 1.25 else " NOT met")


def phase_rows(
    result: dict[str, Any],
    in_flight: dict[str, int],
    n_judges: int,
    concurrency: int,
    latency: float,
    wall_ideal: float,
    cached: bool,
) -> list[list[str]]:
    from django.db.models import Avg

    from jury.models import JudgeCall

    server, wall = result["server"], result["wall"]
    calls = JudgeCall.objects.filter(run=result["run"])
    total = calls.count()
    ratio = wall / wall_ideal if wall_ideal else float("nan")
    lat = calls.filter(cached_from__isnull=True, latency_ms__isnull=False).aggregate(
        a=Avg("latency_ms")
    )["a"]
    requests = server["total_requests"]
    return [
        ["calls", f"{total:,}"],
        ["wall (first task sent -> run finished_at)", f"{wall:.2f} s"],
        ["ideal (calls x latency / total concurrency)", f"{wall_ideal:.2f} s"],
        ["ratio wall / ideal (target <= 1.25)", ratio_text(ratio, cached)],
        ["calls/s", f"{total / wall:.1f}" if wall > 0 else "-"],
        [
            "provider requests; mean in flight (requests x latency / wall)",
            f"{requests:,}; {requests * latency / wall:.1f} of {concurrency * n_judges}"
            if wall > 0
            else "-",
        ],
        ["mean latency of a provider call as the worker saw it", f"{lat:.0f} ms" if lat else "-"],
        [
            "max in flight per judge at the server (limit)",
            ", ".join(f"{m} {n}" for m, n in in_flight.items()) + f" ({concurrency})",
        ],
        ["start_run before dispatch (render, insert calls)", f"{result['create_seconds']:.2f} s"],
        [
            "dispatch: sending the tasks to Redis (in the wall)",
            f"{result['dispatch_seconds']:.2f} s",
        ],
        ["PostgreSQL commits per call", f"{result['commits'] / total:.1f}" if total else "-"],
    ]


def timeline(result: dict[str, Any]) -> str:
    """Calls finished per second of the run (from finished_at), as min / median / max over
    the full seconds between the first and the last finish."""
    from jury.models import JudgeCall

    start = result["dispatch_start"]
    times = sorted(
        t.timestamp() - start
        for t in JudgeCall.objects.filter(run=result["run"]).values_list("finished_at", flat=True)
        if t is not None
    )
    if not times:
        return "no call finished"
    per_second = Counter(int(t) for t in times)
    full = [per_second.get(s, 0) for s in range(int(times[0]) + 1, int(times[-1]))]
    rates = sorted(full) or [len(times)]
    return (
        f"first call finished at {times[0]:.2f} s, last at {times[-1]:.2f} s; calls finished per "
        f"second in between: min {rates[0]}, median {rates[len(rates) // 2]}, max {rates[-1]}"
    )


def print_cpu(result: dict[str, Any]) -> None:
    if not result["cpu"]:
        return
    budget = (os.cpu_count() or 1) * max(result["polled_wall"], 1e-9)
    print(
        f"CPU during the phase ({budget:.0f} core-s available over {result['polled_wall']:.1f} s): "
        + ", ".join(f"{k} {v:.1f} s ({100 * v / budget:.0f}%)" for k, v in result["cpu"].items())
    )
    if result["cpu_others"]:
        print(
            "  everything else, by process: "
            + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in result["cpu_others"])
        )


def print_postgres(result: dict[str, Any]) -> None:
    s = result["sampler"]
    if not s.samples:
        return
    print(
        f"PostgreSQL ({s.samples} samples of pg_stat_activity): active backends mean "
        f"{sum(s.active) / s.samples:.1f}, max {max(s.active)}; waiting on a lock mean "
        f"{sum(s.waiting) / s.samples:.2f}, max {max(s.waiting)}, in "
        f"{100 * sum(1 for w in s.waiting if w) / s.samples:.0f}% of samples; "
        f"{result['rollbacks']} rollbacks, {result['deadlocks']} deadlocks"
    )
    for stmt, n in s.waiting_statements.most_common(3):
        print(f"  waiting x{n}: {stmt}")
