"""The report of the instrumented workers (--instrument, --cprofile): their figures merged,
per judge call, and the cProfile tops."""

from __future__ import annotations

import io
import json
import pstats
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from _support import print_table

TASK_BODIES = ("execute_call (whole task body)", "execute_calls (whole chunk task body)")
PROFILES = (
    (".prof", "the task bodies (their threads)"),
    (".loop.prof", "the event loop's thread (provider requests, Redis tokens)"),
    (".main.prof", "the main thread (Celery's consumer)"),
)


@dataclass
class Merged:
    """The figures of all instrumented workers added up, and their profile files."""

    phases: dict[str, list[float]] = field(
        default_factory=lambda: defaultdict(lambda: [0, 0.0, 0.0])
    )
    sql: dict[str, list[float]] = field(default_factory=lambda: defaultdict(lambda: [0, 0.0]))
    acquire: Counter[str] = field(default_factory=Counter)
    thread_cpu: Counter[str] = field(default_factory=Counter)
    profiles: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))


def merge(outputs: list[Path]) -> Merged:
    merged = Merged()
    for out in outputs:
        if not out.exists():
            print(f"(no instrumentation from {out.name}: the worker did not shut down cleanly)")
            continue
        data = json.loads(out.read_text())
        for k, v in data["phases"].items():
            for i, x in enumerate(v):
                merged.phases[k][i] += x
        for k, v in data["sql"].items():
            for i, x in enumerate(v):
                merged.sql[k][i] += x
        merged.acquire.update(data["acquire"])
        for k, v in data.get("threads", {}).items():
            merged.thread_cpu[k] += v
        for suffix, _what in PROFILES:
            if out.with_suffix(suffix).exists():
                merged.profiles[suffix].append(str(out.with_suffix(suffix)))
    return merged


def report_instrumentation(outputs: list[Path], n_calls: int) -> None:
    """Figures per judge call (all calls of the bench: warm-up and the three phases)."""
    merged = merge(outputs)
    n_tasks = sum(merged.phases.get(k, [0])[0] for k in TASK_BODIES)
    per = n_calls or 1  # the denominator: per call
    print(
        f"\ninstrumented worker(s), whole bench (warm-up and all phases): {n_calls:,} calls in "
        f"{int(n_tasks):,} tasks; limiter acquire outcomes (per-call path) {dict(merged.acquire)}"
    )
    print(
        "worker CPU per call by thread: "
        + ", ".join(
            f"{k} {1000 * v / per:.2f} ms"
            for k, v in sorted(merged.thread_cpu.items(), key=lambda kv: -kv[1])
        )
    )
    print_phases(merged.phases, per)
    print_sql(merged.sql, per)
    for suffix, what in PROFILES:
        print_profile(merged.profiles.get(suffix, []), what)


def print_phases(phases: dict[str, list[float]], per: int) -> None:
    rows = [
        [
            k,
            f"{int(v[0]):,}",
            f"{v[0] / per:.2f}",
            f"{1000 * v[1] / v[0]:.2f}",
            f"{1000 * v[2] / v[0]:.2f}",
            f"{1000 * v[1] / per:.1f}",
            f"{1000 * v[2] / per:.2f}",
        ]
        for k, v in sorted(phases.items(), key=lambda kv: -kv[1][1])
    ]
    header = ["phase", "count", "per call", "wall ms each", "CPU ms each"]
    print_table([*header, "wall ms per call", "CPU ms per call"], rows)


def print_sql(sql: dict[str, list[float]], per: int) -> None:
    n_sql = sum(v[0] for v in sql.values())
    print(f"\nSQL: {n_sql / per:.1f} statements per call (COMMIT included), by kind:")
    rows = [
        [
            k,
            f"{int(v[0]):,}",
            f"{v[0] / per:.2f}",
            f"{1000 * v[1] / v[0]:.2f}",
            f"{1000 * v[1] / per:.2f}",
        ]
        for k, v in sorted(sql.items(), key=lambda kv: -kv[1][1])
    ]
    print_table(["statement", "count", "per call", "wall ms each", "wall ms per call"], rows)


def print_profile(found: list[str], what: str) -> None:
    """The top 30 functions of the profiles in `found`, added up, by own and cumulative time."""
    if not found:
        return
    stats = pstats.Stats(found[0])
    for p in found[1:]:
        stats.add(p)
    for key in ("tottime", "cumulative"):
        buf = io.StringIO()
        stats.stream = buf
        stats.sort_stats(key).print_stats(30)
        text = buf.getvalue()
        print(f"\ncProfile (thread CPU time) of {what}, by {key} (top 30):")
        print(text[text.find("   ncalls") :].rstrip())
