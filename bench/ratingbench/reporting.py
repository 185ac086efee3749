"""The rating bench's report: set-up, latency per endpoint against the baseline, load, CPU,
PostgreSQL, queries per request, and the integrity verdict (which sets the exit status)."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

from _support import PgSampler, db_name, print_table

from ratingbench.clients import Clinician, Endpoint, Phase
from ratingbench.load import Connection


@dataclass
class Setup:
    """The seeded study as the load generator sees it, and how long each set-up step took."""

    seed: dict[str, Any]
    clinicians: list[Clinician]
    times: dict[str, float]

    @property
    def study_id(self) -> int:
        return self.seed["study_id"]

    @property
    def criteria(self) -> list[dict[str, Any]]:
        return self.seed["criteria"]


@dataclass
class Measured:
    """Everything the report prints, measured while gunicorn ran."""

    base: Phase
    rate: Phase
    sampler: PgSampler
    stats_before: dict[str, int]
    stats_after: dict[str, int]
    load: tuple[float, float]
    check: dict[str, Any]
    ok_submits: set[int]
    queries: dict[str, Any]
    server_log_tail: str
    port: int
    #: The agreement watch after the run (--broker only): see runner.watch_state.
    watch: dict[str, Any] | None = None


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an already sorted list, in ms."""
    if not sorted_values:
        return float("nan")
    rank = max(1, min(len(sorted_values), int(-(-q * len(sorted_values) // 100))))
    return 1000 * sorted_values[rank - 1]


# The target (issue 17): the rating page's and the submit's p95 within this many times the
# baseline's p95 in the same run, with no error and every accepted rating stored once.
P95_TARGET_RATIO = 3.0
TARGET_ENDPOINTS = ("page", "submit")


def endpoint_row(
    ep: Endpoint,
    elapsed: float,
    base: tuple[float, float] | None,
    server: list[float] | None,
) -> list[str]:
    """One table row; `base` is the baseline's (p50, p95), None for the baseline's own row."""
    lat = sorted(ep.latencies)
    p50 = percentile(lat, 50)
    p95 = percentile(lat, 95)
    ratio = f"{p50 / base[0]:.1f}x" if base else "1.0x (baseline)"
    ratio95 = f"{p95 / base[1]:.1f}x" if base else "1.0x (baseline)"
    srv = sorted(server or [])
    return [
        ep.label,
        f"{len(lat):,}",
        f"{ep.errors}",
        f"{p50:.1f}",
        f"{percentile(lat, 95):.1f}",
        f"{percentile(lat, 99):.1f}",
        f"{len(lat) / elapsed:.1f}",
        f"{percentile(srv, 50):.1f}" if srv else "-",
        f"{percentile(srv, 95):.1f}" if srv else "-",
        ratio,
        ratio95,
    ]


def report(args: argparse.Namespace, setup: Setup, m: Measured) -> bool:
    """Print everything; True when the integrity checks pass and no request failed."""
    print_header(args, setup, m)
    all_rate = print_latencies(m.base, m.rate)
    print_load(args, setup, m, all_rate)
    print_postgres(m)
    if args.show_queries:
        print_queries(m.queries)
    intact = print_integrity(m)
    if m.watch is not None:
        intact = print_watch(m.watch) and intact
    return print_target(m, intact) and intact


def print_watch(watch: dict[str, Any]) -> bool:
    """The background side of the production layout: did the agreement watch keep up with
    the ratings, and did any task fail? True when it caught up without an error."""
    good = watch["caught_up"] and not watch["error"] and not watch["worker_errors"]
    print(
        f"\nagreement watch (Celery workers): last refresh saw {watch['seen']:,} of "
        f"{watch['submitted']:,} submissions, caught up {watch['catch_up_seconds']:.1f} s after "
        f"the rating phase: {watch['caught_up']}; refresh error: {watch['error'] or 'none'}; "
        f"worker errors: {len(watch['worker_errors'])} -> {'OK' if good else 'FAILED'}"
    )
    for line in watch["worker_errors"][:5]:
        print(f"  {line}")
    return good


def print_target(m: Measured, intact: bool) -> bool:
    """The target against the baseline of the same run; True when it holds."""
    base_p95 = percentile(sorted(m.base.endpoints["login"].latencies), 95)
    ratios = {
        key: percentile(sorted(m.rate.endpoints[key].latencies), 95) / base_p95
        for key in TARGET_ENDPOINTS
    }
    held = intact and all(r <= P95_TARGET_RATIO for r in ratios.values())
    print(
        f"\ntarget: p95 / baseline p95 <= {P95_TARGET_RATIO:g}x for the rating page "
        f"({ratios['page']:.2f}x) and the submit ({ratios['submit']:.2f}x), no error, every "
        f"accepted rating stored once -> {'HOLDS' if held else 'MISSED'}"
    )
    return held


def print_header(args: argparse.Namespace, setup: Setup, m: Measured) -> None:
    import psycopg

    url = args.database_url
    think = f"mean think time {args.think:g} s" if args.think else "no think time"
    base = args.baseline_duration or args.duration
    layout = (
        f"; production layout: Celery broker {args.broker}, two workers and beat"
        if args.broker
        else ""
    )
    print(
        f"\nbench_rating: {args.clinicians} simulated clinicians, rating {args.duration:g} s, "
        f"baseline {base:g} s, {think}{layout}"
    )
    print(
        f"machine: {os.cpu_count() or 0} cores (os.cpu_count), load average before "
        f"{m.load[0]:.2f}, after {m.load[1]:.2f}; shared with other jobs, so figures are noisy"
    )
    with psycopg.connect(url) as conn:
        pg_version = conn.execute("SHOW server_version").fetchone()[0]
    print(
        f"software: Python {sys.version.split()[0]}, Django {version('django')}, DRF "
        f"{version('djangorestframework')}, gunicorn {version('gunicorn')}, PostgreSQL {pg_version}"
    )
    print(
        f"server: gunicorn medhelm_site.wsgi -k gthread -w {args.workers} --threads {args.threads} "
        f"(keep-alive 2 s), DEBUG off, manifest static storage, CONN_MAX_AGE=60, on 127.0.0.1:{m.port}"
    )
    connections = (
        "one keep-alive connection per clinician"
        if Connection.keepalive
        else "a new connection per request"
    )
    print(
        f"client: asyncio HTTP/1.1, {connections} (see --keepalive); runs in this process, on "
        "the same cores"
    )
    print(
        f"per gunicorn worker: requests served baseline {m.base.per_worker}, rating "
        f"{m.rate.per_worker}; open client connections halfway baseline {m.base.connections}, "
        f"rating {m.rate.connections}"
    )
    seed, times = setup.seed, setup.times
    print(
        f"data: {seed['items']:,} items x k={args.k} = {seed['assignments']:,} assignments over "
        f"{len(setup.clinicians)} clinicians, {len(setup.criteria)} criteria; database {db_name(url)}"
    )
    print(
        f"setup: create db {times['create']:.1f} s, migrate {times['migrate']:.1f} s, "
        f"collectstatic {times['static']:.1f} s, seed {times['seed']:.1f} s ("
        + ", ".join(f"{k} {v:.2f} s" for k, v in seed["timings"].items())
        + ")\n"
    )


def print_latencies(base: Phase, rate: Phase) -> Endpoint:
    """The table per endpoint; returns the rating phase's requests as one endpoint."""
    base_ep = base.endpoints["login"]
    base_sorted = sorted(base_ep.latencies)
    base_p = (percentile(base_sorted, 50), percentile(base_sorted, 95))
    header = ["endpoint", "requests", "errors", "p50 ms", "p95 ms", "p99 ms", "req/s"]
    header += ["in-worker p50", "in-worker p95", "p50 / baseline p50", "p95 / baseline p95"]
    rows = [endpoint_row(base_ep, base.elapsed, None, base.server.get("login"))]
    rows += [
        endpoint_row(ep, rate.elapsed, base_p, rate.server.get(key))
        for key, ep in rate.endpoints.items()
    ]
    all_rate = Endpoint("rating phase, all requests")
    for ep in rate.endpoints.values():
        all_rate.latencies += ep.latencies
        all_rate.errors += ep.errors
    all_server = [t for k, v in rate.server.items() if k != "other" for t in v]
    rows.append(endpoint_row(all_rate, rate.elapsed, base_p, all_server))
    print_table(header, rows)
    print(
        "(latencies in ms; p50/p95/p99 as the client saw them, queueing included; in-worker: "
        "from gunicorn's access log, the time a worker thread spent on the request)"
    )
    return all_rate


def print_load(args: argparse.Namespace, setup: Setup, m: Measured, all_rate: Endpoint) -> None:
    """Throughput, CPU per part, status codes, clinicians who ran out of items."""
    base, rate = m.base, m.rate
    base_ep = base.endpoints["login"]
    loops = len(rate.endpoints["submit"].latencies)
    print(
        f"\noverall: baseline {len(base_ep.latencies) / base.elapsed:.1f} req/s over {base.elapsed:.1f} s; "
        f"rating phase {len(all_rate.latencies) / rate.elapsed:.1f} req/s over {rate.elapsed:.1f} s "
        f"({loops / rate.elapsed:.1f} clinician loops/s: redirect + page + submit)"
    )
    for ph in (base, rate):
        budget = (os.cpu_count() or 0) * ph.elapsed
        print(
            f"CPU during {ph.name} ({budget:.0f} core-s available): "
            + ", ".join(f"{k} {v:.1f} s ({100 * v / budget:.0f}%)" for k, v in ph.cpu.items())
        )
    statuses = {
        ep.label.split(" (")[0]: dict(ep.statuses) for ep in [base_ep, *rate.endpoints.values()]
    }
    print(f"status codes: {statuses}")
    exhausted = sum(c.exhausted for c in setup.clinicians)
    if exhausted:
        print(
            f"note: {exhausted} clinicians finished their whole queue during the run (use --items)"
        )


def print_postgres(m: Measured) -> None:
    """Lock waits sampled during the rating phase, transactions, queries per request."""
    sampler = m.sampler
    if sampler.samples:
        waiting = sampler.waiting
        print(
            f"\nPostgreSQL during the rating phase ({sampler.samples} samples of pg_stat_activity, 100 ms): "
            f"active backends mean {sum(sampler.active) / sampler.samples:.1f}, max {max(sampler.active)}; "
            f"waiting on a lock mean {sum(waiting) / sampler.samples:.2f}, max {max(waiting)}, "
            f"in {100 * sum(1 for w in waiting if w) / sampler.samples:.0f}% of samples"
        )
        for stmt, n in sampler.waiting_statements.most_common(3):
            print(f"  waiting x{n}: {stmt}")
    elif sampler.error:
        print(f"pg_stat_activity sampler failed: {sampler.error}")
    before, after = m.stats_before, m.stats_after
    print(
        f"transactions: {after['commits'] - before['commits']:,} commits, "
        f"{after['rollbacks'] - before['rollbacks']} rollbacks, "
        f"{after['deadlocks'] - before['deadlocks']} deadlocks"
    )
    print(
        "queries per request (one request each, unloaded, Django test client, same database): "
        + ", ".join(
            f"{name} {q['count']} ({1000 * q['wall']:.0f} ms)"
            for name, q in m.queries.items()
            if name != "assignment"
        )
    )


def print_queries(queries: dict[str, Any]) -> None:
    """--show-queries: the SQL of each request, long statements shortened."""
    for name, q in queries.items():
        if name == "assignment":
            continue
        print(f"\n-- {name} (HTTP {q['status']}): {q['count']} queries")
        for t, sql_text in q["queries"]:
            short = sql_text if len(sql_text) <= 260 else f"{sql_text[:180]} ... {sql_text[-70:]}"
            print(f"  {float(t) * 1000:4.0f} ms  {short}")


def print_integrity(m: Measured) -> bool:
    """The database check and the error counts; True when all pass."""
    check = m.check
    endpoints = [m.base.endpoints["login"], *m.rate.endpoints.values()]
    server_errors = sum(ep.server_errors for ep in endpoints)
    errors = sum(ep.errors for ep in endpoints)
    content = sum(ep.content_errors for ep in endpoints)
    good = (
        not check["bad"]
        and check["matches_client"]
        and check["stray_ratings"] == 0
        and check["audit_rows"] == check["submitted"] * check["criteria"]
    )
    print(
        f"\nintegrity: {check['submitted']:,} submitted assignments in the database, "
        f"{len(m.ok_submits):,} answered 200 to the client (same set: {check['matches_client']}); "
        f"{len(check['bad'])} without exactly one complete rating per each of the {check['criteria']} "
        f"criteria; {check['stray_ratings']} ratings on unsubmitted assignments; "
        f"{check['audit_rows']:,} rating.submit audit rows (expected "
        f"{check['submitted'] * check['criteria']:,}) -> {'OK' if good else 'FAILED'}"
    )
    if check["bad"]:
        print(f"  first offenders (assignment, ratings, criteria, complete): {check['bad'][:5]}")
    print(
        f"5xx responses: {server_errors} -> {'OK' if server_errors == 0 else 'FAILED'}; "
        f"all errors (>= 400 or no response): {errors}; page/body content mismatches: {content}"
    )
    if server_errors or errors:
        print(f"gunicorn log (last lines):\n{m.server_log_tail}")
    return good and server_errors == 0 and errors == 0 and content == 0
