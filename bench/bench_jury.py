"""Jury runs through real Celery workers against a local fake provider: throughput and accounting.

    .venv/bin/python bench/bench_jury.py [--items 2000] [--quick] [--workers 2] [--threads 6]
        [--latency 0.1] [--concurrency 16] [--failure-rate 0.05] [--retry-after 0.2]
        [--database-url postgres://postgres@127.0.0.1:5432/medhelm_bench_jury]
        [--redis-url redis://127.0.0.1:6379/12] [--instrument] [--cprofile] [--drop]

The issue's benchmark: N items x 3 judges against a local server answering in `--latency`
seconds, each judge allowing `--concurrency` requests in flight. Ideal wall time =
items x judges x latency / (judges x concurrency); target: wall / ideal <= 1.25.

1. Drops and recreates a PostgreSQL database (default medhelm_bench_jury), migrates it,
   flushes a dedicated Redis database (default db 12) used as the Celery broker, and seeds
   through the services: three studies (phase 1, phase 2, warm-up) with the MedHELM rubric
   and distinct item texts, and three judges (two OpenAI-protocol, one Anthropic-protocol),
   each max_concurrency=16, no RPM limit, params {"max_attempts": 6}, a key in the worker's
   environment and prices per million tokens.
2. Starts the FakeProvider (tests/jury/fake_provider.py, the real HTTP server the tests use)
   in its own process, with routes of this bench's own under /bench/ to configure it between
   phases and to read its counters: requests, outcomes and billed usage per (model, prompt),
   and the maximum number of requests in flight per model.
3. Starts the Celery worker(s) as in production: `celery -A medhelm_site worker -P threads
   -c T` (--workers W processes of T threads each; default 2 x 6), DEBUG off, PostgreSQL,
   Redis broker (so the judges' limits live in Redis and start_run sends chunks of calls, run
   on each worker's event loop: jury.execution.execute_calls), CONN_MAX_AGE=60, log level
   WARNING. A warm-up run (64 items, not timed) loads the SDKs and opens connections first,
   as a long-running worker would have.
4. Phase 1: services.start_run(dispatch=True) in this process; the wall time runs from the
   first task sent (on commit) until the run's finished_at. Prints wall, ideal, ratio, calls/s,
   the maximum in flight per judge seen by the server (must be <= the judge's limit), statuses.
5. Phase 2: a new study (so the cache serves nothing), `--failure-rate` of the requests answered
   429 (with Retry-After `--retry-after` s) or 500, chosen by the server's seeded RNG. Then the
   accounting, from the database and from the server's own counters: no call pending, ok +
   failed = total, per call the server saw exactly `attempts` requests (at most 1 + its failed
   ones), every answered call (ok, invalid verdict, refused) was billed exactly once and every
   call without an answer never, tokens and cost in the database equal what the server billed
   times the judge's prices, no (judge, prompt hash) billed twice, no lease left behind
   (database leases; the Redis tokens are checked by tests/jury/test_limits_redis.py).
6. Phase 3: phase 1's items again: every call must come from the cache, with 0 requests to
   the server and cost 0.

--instrument runs the workers through this file instead of the `celery` command, with timers
around the phases of a call (cache lookup, provider request, the batched save, finish check,
and the per-call path's limiter acquire/release), the workers' CPU per call by thread (event
loop, task threads, Celery's main thread), and every SQL statement counted and timed by kind;
--cprofile adds cProfile (thread CPU) of the task threads, the event loop and the main thread.
Both slow the worker down: use them to see where the time goes, not for the ratio. Exit status 1 if an accounting check fails or a run does not finish.
An advisory lock (named after the database and the Redis URL) keeps a second run on the same
ones from starting and dropping the first one's database.

The worker, the fake server, PostgreSQL, Redis and this process share the machine's cores (2
on the reference machine, shared with other jobs): figures are noisy. Compare runs made on the
same machine at about the same time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

from _support import (
    APP_SETTINGS,
    PYTHON,
    ROOT,
    VENV_BIN,
    cpu_seconds,
    db_name,
    django_setup,
    drop_database,
    machine_busy_seconds,
    maintenance_url,
    pg_backend_pids,
    pg_stats,
    print_table,
    recreate_database,
    run_step,
    sigterm_as_exit,
)

DEFAULT_DB_URL = "postgres://postgres@127.0.0.1:5432/medhelm_bench_jury"
# The tests use Redis databases 14 and 15; this bench flushes its own.
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/12"
API_KEY_ENV = "BENCH_JURY_API_KEY"
WARMUP_ITEMS = 64
# (name, provider, model id, input price, output price per million tokens)
JUDGES = (
    ("bench-gpt-large", "openai", "bench-gpt-large", Decimal("2.50"), Decimal("10.00")),
    ("bench-gpt-small", "openai", "bench-gpt-small", Decimal("0.15"), Decimal("0.60")),
    ("bench-claude", "anthropic", "bench-claude", Decimal("3.00"), Decimal("15.00")),
)


# --- the fake provider, in a process of its own ------------------------------------------------


def serve_fake_provider(params: dict[str, Any]) -> None:
    """Serve tests.support.fake_provider.FakeProvider until SIGTERM, plus /bench/ routes:
    POST /bench/config (latency, failure rate and outcomes, Retry-After, seed),
    POST /bench/reset (counters), GET /bench/stats (counters as JSON)."""
    sys.path.insert(0, str(ROOT))
    from tests.support import fake_provider as fp

    class BenchProvider(fp.FakeProvider):
        def __init__(self, **kw: Any) -> None:
            super().__init__(**kw)
            self.in_flight_by_model: Counter[str] = Counter()
            self.max_in_flight_by_model: Counter[str] = Counter()
            # (model, sha256 of the user prompt) -> [requests, ok outcomes, error outcomes,
            # 200 responses with usage (billed), input tokens billed, output tokens billed]
            self.per_key: dict[tuple[str, str], list[int]] = {}
            self.first_request: float | None = None
            self.last_response: float | None = None

        def _begin(self, protocol: str, path: str, headers: dict, body: dict) -> fp.Exchange:
            exchange = super()._begin(protocol, path, headers, body)
            model = exchange.model
            key = (model, fp.prompt_key(exchange.prompt))
            exchange.extra["key"] = key
            with self._lock:
                self.in_flight_by_model[model] += 1
                self.max_in_flight_by_model[model] = max(
                    self.max_in_flight_by_model[model], self.in_flight_by_model[model]
                )
                row = self.per_key.setdefault(key, [0, 0, 0, 0, 0, 0])
                row[0] += 1
                row[1 if exchange.outcome == "ok" else 2] += 1
                if self.first_request is None:
                    self.first_request = time.time()
            return exchange

        def _end(self, exchange: fp.Exchange) -> None:
            super()._end(exchange)
            with self._lock:
                self.in_flight_by_model[exchange.model] -= 1
                self.last_response = time.time()

        def _responded(self, exchange: fp.Exchange, status: int, data: Any) -> None:
            # A 200 carrying usage is what a provider bills.
            if (
                status != 200
                or not isinstance(data, dict)
                or not isinstance(data.get("usage"), dict)
            ):
                return
            usage = data["usage"]
            n_in = usage.get("prompt_tokens", usage.get("input_tokens", 0))
            n_out = usage.get("completion_tokens", usage.get("output_tokens", 0))
            with self._lock:
                row = self.per_key[exchange.extra["key"]]
                row[3] += 1
                row[4] += int(n_in)
                row[5] += int(n_out)

        def bench_reset(self) -> None:
            self.reset()
            with self._lock:
                self.per_key.clear()
                self.max_in_flight_by_model = Counter(
                    {m: n for m, n in self.in_flight_by_model.items() if n}
                )
                self.first_request = self.last_response = None

        def stats(self) -> dict[str, Any]:
            with self._lock:
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
            data = json.loads(body or b"{}")
            if path == "/bench/reset":
                self.bench_reset()
            elif path == "/bench/config":
                with self._lock:
                    self.latency_seconds = float(data.get("latency", self.latency_seconds))
                    self.failure_rate = float(data.get("failure_rate", 0.0))
                    self.failure_outcomes = tuple(data.get("failure_outcomes", ("429", "500")))
                    self.retry_after_seconds = data.get("retry_after", self.retry_after_seconds)
                    self._rng = random.Random(int(data.get("seed", 0)))
            else:
                return 404, b"{}"
            return 200, b"{}"

    server = BenchProvider(latency_seconds=float(params["latency"]), seed=int(params["seed"]))
    server.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(f"URL {server.url}", flush=True)
    stop.wait()
    server.stop()


class FakeServer:
    """The fake provider's process, and its /bench/ routes from this side."""

    def __init__(self, latency: float, log_path: Path) -> None:
        self.log = open(log_path, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [PYTHON, __file__, "--internal", "server", json.dumps({"latency": latency, "seed": 0})],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            start_new_session=True,
        )
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("URL "):
            self.stop()
            raise SystemExit(f"the fake provider did not start: {line!r}")
        self.url = line.split()[1]

    def _post(self, path: str, data: dict[str, Any]) -> None:
        req = urllib.request.Request(self.url + path, data=json.dumps(data).encode(), method="POST")
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()

    def configure(self, **config: Any) -> None:
        self._post("/bench/config", config)

    def reset(self) -> None:
        self._post("/bench/reset", {})

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.url + "/bench/stats", timeout=60) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


# --- an instrumented worker: phase timers, SQL counts, cProfile ----------------------------------


def run_instrumented_worker(celery_args: list[str]) -> None:
    django_setup()
    out = Path(os.environ["BENCH_INSTRUMENT_OUT"])
    use_cprofile = os.environ.get("BENCH_CPROFILE") == "1"
    import cProfile

    from celery.signals import worker_shutdown
    from django.db.backends.signals import connection_created

    from jury import limits, tasks
    from jury.execution import clients, engine, single, storage

    lock = threading.Lock()
    phases: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])  # count, wall, cpu
    sql: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])  # count, wall
    acquired: Counter[str] = Counter()
    profiles: list[cProfile.Profile] = []
    loop_profiles: list[cProfile.Profile] = []
    main_profiles: list[cProfile.Profile] = []
    task_threads: dict[int, float] = {}  # native thread id -> its CPU seconds so far
    local = threading.local()

    def add(name: str, wall: float, cpu: float) -> None:
        with lock:
            row = phases[name]
            row[0] += 1
            row[1] += wall
            row[2] += cpu

    def timed(name: str, fn):
        def wrapper(*a: Any, **kw: Any) -> Any:
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                return fn(*a, **kw)
            finally:
                add(name, time.perf_counter() - t0, time.thread_time() - c0)

        return wrapper

    table = re.compile(r'(?:FROM|INTO|UPDATE)\s+"([a-z_]+)"')

    def sql_label(text: str) -> str:
        verb = text.lstrip().split(None, 1)[0].upper()
        m = table.search(text)
        label = f"{verb} {m.group(1) if m else ''}".strip()
        if "FOR UPDATE" in text:
            label += " FOR UPDATE"
        if "COUNT(" in text.upper():
            label += " count"
        elif verb == "SELECT" and re.match(r'\s*SELECT (?:1|%s) AS "a" ', text):
            label += " exists"
        return label

    def sql_wrapper(execute, text, params, many, context):
        t0 = time.perf_counter()
        try:
            return execute(text, params, many, context)
        finally:
            wall = time.perf_counter() - t0
            label = sql_label(text)
            with lock:
                row = sql[label]
                row[0] += 1
                row[1] += wall

    def on_connect(sender, connection, **kw: Any) -> None:
        if sql_wrapper not in connection.execute_wrappers:
            connection.execute_wrappers.append(sql_wrapper)

    connection_created.connect(on_connect, weak=False)
    from django.db.backends.base.base import BaseDatabaseWrapper

    original_commit = BaseDatabaseWrapper.commit

    def commit(self):
        t0 = time.perf_counter()
        try:
            return original_commit(self)
        finally:
            with lock:
                row = sql["COMMIT"]
                row[0] += 1
                row[1] += time.perf_counter() - t0

    BaseDatabaseWrapper.commit = commit

    original_acquire = limits.acquire

    def acquire(**kw: Any):
        t0, c0 = time.perf_counter(), time.thread_time()
        slot = original_acquire(**kw)
        name = "taken" if slot.taken_elsewhere else "ok" if slot.ok else "wait"
        add(f"limits.acquire ({name})", time.perf_counter() - t0, time.thread_time() - c0)
        with lock:
            acquired[name] += 1
        return slot

    limits.acquire = acquire
    limits.release = timed("limits.release", limits.release)
    storage.cache_sources = timed("cache lookup (storage.cache_sources)", storage.cache_sources)
    storage.save_outcomes = timed("storage.save_outcomes (one transaction)", storage.save_outcomes)
    storage.finish_run_if_done = timed("storage.finish_run_if_done", storage.finish_run_if_done)

    class TimedClient:
        def __init__(self, client: Any) -> None:
            self.client = client

        def complete(self, request: Any) -> Any:
            t0, c0 = time.perf_counter(), time.thread_time()
            outcome = "ok"
            try:
                return self.client.complete(request)
            except Exception:
                outcome = "error"
                raise
            finally:
                add(
                    f"provider call ({outcome})",
                    time.perf_counter() - t0,
                    time.thread_time() - c0,
                )

    original_client = single.sync_client
    wrapped: dict[int, TimedClient] = {}

    def client(judge: Any) -> TimedClient:
        inner = original_client(judge)
        with lock:
            return wrapped.setdefault(id(inner), TimedClient(inner))

    single.sync_client = client

    # The event loop's requests: wall time only (the loop's CPU is shared by all of them).
    original_complete = clients.AsyncProvider.complete

    async def complete(self: Any, request: Any) -> Any:
        t0 = time.perf_counter()
        outcome = "ok"
        try:
            return await original_complete(self, request)
        except Exception:
            outcome = "error"
            raise
        finally:
            add(f"provider call on the event loop ({outcome}; wall)", time.perf_counter() - t0, 0.0)

    clients.AsyncProvider.complete = complete

    def task_body(name: str, fn: Any) -> Any:
        def wrapper(**kw: Any) -> Any:
            pr = getattr(local, "profile", None)
            if use_cprofile and pr is None:
                # CPU time of this thread: waits (GIL, locks, sockets) are in the phase timers.
                pr = local.profile = cProfile.Profile(time.thread_time)
                with lock:
                    profiles.append(pr)
            t0, c0 = time.perf_counter(), time.thread_time()
            if pr is not None:
                pr.enable()
            try:
                return fn(**kw)
            finally:
                if pr is not None:
                    pr.disable()
                add(name, time.perf_counter() - t0, time.thread_time() - c0)
                with lock:  # the pool's threads are gone by the time the figures are dumped
                    task_threads[threading.get_native_id()] = time.thread_time()

        return wrapper

    if use_cprofile:
        # The event loop's thread too: the provider requests' CPU is spent there.
        original_run = engine.Engine._run

        def run(self: Any, ready: Any) -> None:
            pr = cProfile.Profile(time.thread_time)
            with lock:
                loop_profiles.append(pr)
            pr.enable()
            try:
                original_run(self, ready)
            finally:
                pr.disable()

        engine.Engine._run = run

    tasks.execute_call = task_body("execute_call (whole task body)", tasks.execute_call)
    tasks.execute_calls = task_body("execute_calls (whole chunk task body)", tasks.execute_calls)

    def thread_cpu() -> dict[str, float]:
        """CPU seconds per kind of thread of this process, from /proc (the event loop, the
        Celery pool's threads, the limiter's heartbeat, the rest)."""
        ticks = os.sysconf("SC_CLK_TCK")
        found: Counter[str] = Counter()
        for thread in threading.enumerate():
            try:
                stat = Path(f"/proc/self/task/{thread.native_id}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if thread.native_id in task_threads:
                continue
            name = thread.name
            kind = (
                "event loop (jury-engine)"
                if name == "jury-engine"
                else "limiter heartbeat"
                if name.startswith("jury-limiter")
                else "Celery main thread (consumer)"
                if name == "MainThread"
                else "other threads"
            )
            found[kind] += (int(fields[11]) + int(fields[12])) / ticks
        found["task threads (Celery pool)"] = sum(task_threads.values())
        return dict(found)

    def dump(**kw: Any) -> None:
        with lock:
            data = {
                "pid": os.getpid(),
                "phases": {k: list(v) for k, v in phases.items()},
                "sql": {k: list(v) for k, v in sql.items()},
                "acquire": dict(acquired),
                "threads": thread_cpu(),
            }
        out.write_text(json.dumps(data))
        import pstats

        for found, suffix in (
            (profiles, ".prof"),
            (loop_profiles, ".loop.prof"),
            (main_profiles, ".main.prof"),
        ):
            if found:
                for pr in found:
                    pr.disable()  # the loop's thread is still running at shutdown
                stats = pstats.Stats(found[0])
                for pr in found[1:]:
                    stats.add(pr)
                stats.dump_stats(str(out.with_suffix(suffix)))

    worker_shutdown.connect(dump, weak=False)
    from medhelm_site.celery import app

    if use_cprofile:
        # The main thread too: Celery's consumer (messages, acks) runs there.
        main_profile = cProfile.Profile(time.thread_time)
        with lock:
            main_profiles.append(main_profile)
        main_profile.enable()
    app.worker_main(["worker", *celery_args])


# --- workers -------------------------------------------------------------------------------------


class Workers:
    """W Celery worker processes of T threads each, in their own session (stopped together)."""

    def __init__(
        self,
        env: dict[str, str],
        workers: int,
        threads: int,
        log_dir: Path,
        instrument: bool,
        cprofile: bool,
    ) -> None:
        self.procs: list[subprocess.Popen] = []
        self.logs = []
        self.instrument_out: list[Path] = []
        for n in range(workers):
            args = [
                "-P",
                "threads",
                "-c",
                str(threads),
                "-n",
                f"bench-jury-{n}@%h",
                "--loglevel",
                "WARNING",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ]
            wenv = dict(env)
            if instrument or cprofile:
                out = log_dir / f"worker-{n}.json"
                self.instrument_out.append(out)
                wenv["BENCH_INSTRUMENT_OUT"] = str(out)
                wenv["BENCH_CPROFILE"] = "1" if cprofile else "0"
                cmd = [PYTHON, __file__, "--internal", "worker", *args]
            else:
                cmd = [str(VENV_BIN / "celery"), "-A", "medhelm_site", "worker", *args]
            log = open(log_dir / f"worker-{n}.log", "w")  # noqa: SIM115 - closed in stop()
            self.logs.append(log)
            self.procs.append(
                subprocess.Popen(
                    cmd,
                    cwd=ROOT,
                    env=wenv,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        self.log_dir = log_dir
        self.command = " ".join(
            [
                "celery -A medhelm_site worker"
                if not (instrument or cprofile)
                else "bench_jury.py --internal worker",
                *args,
            ]
        ).replace(f"bench-jury-{workers - 1}@", "bench-jury-N@")

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def check_alive(self) -> None:
        for n, p in enumerate(self.procs):
            if p.poll() is not None:
                raise SystemExit(f"worker {n} exited ({p.returncode}):\n{self.tail(n)}")

    def tail(self, n: int, lines: int = 30) -> str:
        self.logs[n].flush()
        text = (self.log_dir / f"worker-{n}.log").read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        for p in self.procs:  # warm shutdown first: the instrumented ones dump their figures
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for log in self.logs:
            log.close()


# --- PostgreSQL, Redis, CPU ---------------------------------------------------------------------


def flush_redis(url: str) -> int | None:
    """Empty the bench's Redis database; returns the Redis server's pid (for CPU figures)."""
    import redis

    client = redis.Redis.from_url(url)
    client.flushdb()
    with contextlib.suppress(Exception):
        return int(client.info("server")["process_id"])
    return None


class PgSampler(threading.Thread):
    """Samples pg_stat_activity of the bench database every 100 ms: active backends, backends
    waiting on a lock, and which statements wait."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.stop = threading.Event()
        self.samples = 0
        self.active: list[int] = []
        self.waiting: list[int] = []
        self.waiting_statements: Counter[str] = Counter()
        self.error: str | None = None

    def run(self) -> None:
        import psycopg

        try:
            with psycopg.connect(self.url, autocommit=True) as conn:
                while not self.stop.wait(0.1):
                    rows = conn.execute(
                        """SELECT state, wait_event_type,
                                  left(regexp_replace(query, '\\s+', ' ', 'g'), 110)
                           FROM pg_stat_activity
                           WHERE datname = current_database() AND pid <> pg_backend_pid()"""
                    ).fetchall()
                    self.samples += 1
                    self.active.append(sum(1 for r in rows if r[0] == "active"))
                    waiting = [r[2] for r in rows if r[1] == "Lock"]
                    self.waiting.append(len(waiting))
                    self.waiting_statements.update(waiting)
        except Exception as exc:  # a diagnostic: never fail the bench for it
            self.error = repr(exc)


def process_cpu_seconds() -> dict[int, tuple[str, float]]:
    """Every process on the machine: pid -> (name, utime + stime)."""
    found: dict[int, tuple[str, float]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
            found[int(entry.name)] = (
                name,
                (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"),
            )
    return found


class CpuMeter:
    def __init__(self, workers: Workers, server: FakeServer, url: str, redis_pid: int | None):
        self.workers, self.server, self.url, self.redis_pid = workers, server, url, redis_pid

    def snapshot(self) -> dict[str, dict[int, float]]:
        return {
            "celery worker(s)": {p: cpu_seconds(p) for p in self.workers.pids()},
            "fake provider": {self.server.proc.pid: cpu_seconds(self.server.proc.pid)},
            "postgres": {p: cpu_seconds(p) for p in pg_backend_pids(self.url)},
            "redis": {self.redis_pid: cpu_seconds(self.redis_pid)} if self.redis_pid else {},
            "bench (dispatch, polling)": {os.getpid(): cpu_seconds(os.getpid())},
            "machine": {0: machine_busy_seconds()},
            "processes": process_cpu_seconds(),
        }

    @staticmethod
    def delta(before: dict, after: dict) -> dict[str, float]:
        """CPU seconds per part; "everything else" is what the machine spent beyond them."""
        named = {k: v for k, v in after.items() if k != "processes"}
        used = {k: sum(v - before[k].get(pid, 0.0) for pid, v in named[k].items()) for k in named}
        machine = used.pop("machine")
        used["everything else on the machine"] = max(0.0, machine - sum(used.values()))
        return used

    @staticmethod
    def others(before: dict, after: dict, n: int = 4) -> list[tuple[str, float]]:
        """The processes outside the named parts that spent most CPU, by name (processes
        that ended meanwhile are not seen)."""
        known = {pid for k, part in after.items() if k != "processes" for pid in part}
        spent: Counter[str] = Counter()
        for pid, (name, seconds) in after["processes"].items():
            if pid not in known:
                spent[name] += seconds - before["processes"].get(pid, (name, 0.0))[1]
        return [(name, seconds) for name, seconds in spent.most_common(n) if seconds >= 0.05]


# --- seeding ---------------------------------------------------------------------------------


def _case_texts(tag: str, i: int, rng: random.Random) -> tuple[str, str, str]:
    """Input, reference and output of realistic length; `tag` and `i` make every prompt unique."""
    age, sex = rng.randint(18, 92), rng.choice(["woman", "man"])
    drug = rng.choice(["metformin", "apixaban", "lisinopril", "amoxicillin", "atorvastatin"])
    input_text = (
        f"Case {tag}-{i}. A {age}-year-old {sex} presents with two days of fever, productive "
        f"cough and pleuritic chest pain. Past history: type 2 diabetes on {drug}, hypertension. "
        "Vitals: temperature 38.6 C, heart rate 104, respiratory rate 24, SpO2 91% on room air, "
        "blood pressure 128/76. Chest X-ray shows right lower lobe consolidation. Creatinine "
        "1.4 mg/dL, urea 9 mmol/L.\n\nWhat is the most appropriate initial management, and "
        "where should the patient be treated?"
    )
    reference = (
        "CURB-65 score 2: consider short inpatient stay. Start empirical antibiotics per local "
        "guidance for moderate community-acquired pneumonia (e.g. amoxicillin plus a macrolide), "
        f"oxygen to target 94-98%, fluids, review {drug} given the creatinine, reassess at 48 h."
    )
    output = (
        f"## Assessment\n\nThis {age}-year-old {sex} most likely has community-acquired "
        "pneumonia of moderate severity (CURB-65 of 2).\n\n## Plan\n\n"
        "- **Antibiotics**: amoxicillin 500 mg three times daily plus clarithromycin.\n"
        "- **Oxygen**: titrate to SpO2 94-98%.\n"
        f"- **Kidneys**: hold `{drug}` if eGFR falls; recheck creatinine in 24-48 hours.\n"
        "- **Follow-up**: clinical review at 48-72 hours.\n\n"
        + " ".join(["Reassess daily and step down to oral therapy when afebrile for 48 h."] * 3)
    )
    return input_text, reference, output


def seed(items: int, fake_url: str, concurrency: int) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    from annotation import services
    from jury import limits
    from jury.models import Judge

    user = get_user_model().objects.create(
        username="bench-jury-coordinator", password=make_password(None)
    )
    template = services.ensure_medhelm_rubric_template()
    studies = {}
    for tag, n in (("phase1", items), ("phase2", items), ("warmup", WARMUP_ITEMS)):
        study = services.create_study(
            name=f"bench jury: {tag}", created_by=user, criteria=template.criteria
        )
        rng = random.Random(tag)
        rows = []
        for i in range(n):
            input_text, reference, output = _case_texts(tag, i, rng)
            rows.append(
                services.ItemRow(
                    external_id=f"{tag}-{i:05d}",
                    input_text=input_text,
                    reference_text=reference,
                    output_text=output,
                    model_name="model-under-test",
                )
            )
        services.create_items(study=study, rows=rows, actor=user)
        studies[tag] = study
    judges = []
    for name, provider, model_id, p_in, p_out in JUDGES:
        judge = Judge.objects.create(
            name=name,
            provider=provider,
            model_id=model_id,
            endpoint=f"{fake_url}/v1" if provider == "openai" else fake_url,
            api_key_env=API_KEY_ENV,
            params={"max_attempts": 6},
            price_input_per_mtok=p_in,
            price_output_per_mtok=p_out,
            max_concurrency=concurrency,
            requests_per_minute=None,
            timeout_seconds=60,
        )
        limits.ensure_limiter(judge)
        judges.append(judge)
    return {"user": user, "studies": studies, "judges": judges}


# --- one phase -------------------------------------------------------------------------------


def run_phase(
    *,
    name: str,
    study: Any,
    judges: list,
    user: Any,
    server: FakeServer,
    workers: Workers,
    cpu: CpuMeter | None,
    url: str,
    timeout: float,
) -> dict[str, Any]:
    """Start a run on `study` with `judges`, wait for it to finish, return what was measured."""
    from jury import services
    from jury.models import JuryRun

    marks: dict[str, float] = {}
    original = services._dispatch

    snapshots: dict[str, Any] = {}

    def dispatch(ids: list[int]) -> None:
        # CPU is counted from here: what start_run spent before (rendering, inserting the
        # calls) is outside the wall time too.
        snapshots["before"] = cpu.snapshot() if cpu else None
        marks["dispatch_start"] = time.time()
        marks["dispatch_start_perf"] = time.perf_counter()
        original(ids)
        marks["dispatch_end_perf"] = time.perf_counter()

    services._dispatch = dispatch
    sampler = PgSampler(url)
    stats_before = pg_stats(url)
    sampler.start()
    t0 = time.perf_counter()
    try:
        run = services.start_run(study=study, judges=judges, actor=user, dispatch=True)
    finally:
        services._dispatch = original
    deadline = time.perf_counter() + timeout
    finished = False
    while time.perf_counter() < deadline:
        status = JuryRun.objects.filter(pk=run.pk).values_list("status", flat=True).first()
        if status == JuryRun.Status.FINISHED:
            finished = True
            break
        workers.check_alive()
        time.sleep(0.1)
    polled = time.perf_counter()
    after = cpu.snapshot() if cpu else None
    sampler.stop.set()
    sampler.join()
    stats_after = pg_stats(url)
    run.refresh_from_db()
    start = marks.get("dispatch_start", time.time())
    end = run.finished_at.timestamp() if run.finished_at else time.time()
    return {
        "name": name,
        "run": run,
        "finished": finished,
        "wall": end - start,
        "create_seconds": marks.get("dispatch_start_perf", t0) - t0,
        "dispatch_seconds": marks.get("dispatch_end_perf", t0)
        - marks.get("dispatch_start_perf", t0),
        "polled_wall": polled - marks.get("dispatch_start_perf", t0),
        "dispatch_start": start,
        "cpu": CpuMeter.delta(snapshots["before"], after) if cpu and snapshots else {},
        "cpu_others": CpuMeter.others(snapshots["before"], after) if cpu and snapshots else [],
        "sampler": sampler,
        "commits": stats_after["commits"] - stats_before["commits"],
        "rollbacks": stats_after["rollbacks"] - stats_before["rollbacks"],
        "deadlocks": stats_after["deadlocks"] - stats_before["deadlocks"],
        "server": server.stats(),
    }


def prompt_key(prompt: str) -> str:
    import hashlib

    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def accounting(
    result: dict[str, Any], judges: list, expect_cached: bool
) -> tuple[list[str], list[str]]:
    """Check every call of the run against the database and the server's counters. Returns
    (summary lines, problems)."""
    from django.db.models import Count, Sum

    from jury.models import JudgeCall, JudgeLease, JudgeScore
    from jury.selectors import FAILED

    run = result["run"]
    server = result["server"]
    per_key = {(m, k): row for m, k, *row in server["per_key"]}
    prices = {j.pk: (j.price_input_per_mtok, j.price_output_per_mtok) for j in judges}
    models = {j.pk: j.model_id for j in judges}
    problems: list[str] = []
    calls = list(
        JudgeCall.objects.filter(run=run).values(
            "pk",
            "judge_id",
            "prompt_hash",
            "prompt_text",
            "status",
            "attempts",
            "cost",
            "input_tokens",
            "output_tokens",
            "cached_from_id",
        )
    )
    n_criteria = run.study.criteria.count()
    scores = dict(
        JudgeScore.objects.filter(call__run=run)
        .values_list("call_id")
        .annotate(n=Count("id"))
        .values_list("call_id", "n")
    )
    # An invalid verdict or a refusal is an answer too: billed like an ok call.
    answered = (JudgeCall.Status.OK, JudgeCall.Status.INVALID, JudgeCall.Status.REFUSED)
    by_status = Counter(c["status"] for c in calls)
    pending = by_status.get(JudgeCall.Status.PENDING, 0)
    ok = by_status.get(JudgeCall.Status.OK, 0)
    failed = sum(by_status.get(s, 0) for s in FAILED)
    if pending:
        problems.append(f"{pending} calls still pending (lost)")
    if ok + failed != len(calls):
        problems.append(f"ok {ok} + failed {failed} != total {len(calls)}")
    seen_keys: set[tuple[str, str]] = set()
    expected_cost = Decimal(0)
    attempts_total = 0
    cost_total = Decimal(0)
    mismatches: Counter[str] = Counter()
    examples: dict[str, str] = {}

    def bad(kind: str, call: dict, detail: str) -> None:
        mismatches[kind] += 1
        examples.setdefault(kind, f"call {call['pk']}: {detail}")

    for c in calls:
        key = (models[c["judge_id"]], prompt_key(c["prompt_text"]))
        seen_keys.add(key)
        requests, _ok, err_out, billed, n_in, n_out = per_key.get(key, [0, 0, 0, 0, 0, 0])
        cost = c["cost"] if c["cost"] is not None else Decimal(0)
        cost_total += cost
        attempts_total += c["attempts"]
        if expect_cached:
            if c["cached_from_id"] is None:
                bad("not served from the cache", c, c["status"])
            if requests:
                bad("provider asked although cached", c, f"{requests} requests")
            if cost:
                bad("cached call with a cost", c, str(cost))
            continue
        if c["cached_from_id"] is not None:
            bad("served from the cache (prompts should be new)", c, str(c["cached_from_id"]))
            continue
        if requests != c["attempts"]:
            bad(
                "requests seen by the server != attempts recorded",
                c,
                f"{requests} vs {c['attempts']}",
            )
        if requests > 1 + err_out:
            bad(
                "more requests than 1 + failed attempts",
                c,
                f"{requests} requests, {err_out} failed",
            )
        if c["status"] in answered:  # the provider answered: billed once, at its price
            if billed != 1:
                bad("answered call not billed exactly once by the server", c, f"billed {billed}")
            p_in, p_out = prices[c["judge_id"]]
            expected = (
                (Decimal(n_in) * p_in + Decimal(n_out) * p_out) / Decimal(1_000_000)
            ).quantize(Decimal("1e-8"))
            expected_cost += expected
            if (c["input_tokens"], c["output_tokens"]) != (n_in, n_out):
                bad(
                    "tokens in the database != tokens the server billed",
                    c,
                    f"{(c['input_tokens'], c['output_tokens'])} vs {(n_in, n_out)}",
                )
            if cost != expected:
                bad("cost != billed tokens x prices", c, f"{cost} vs {expected}")
            if c["status"] == JudgeCall.Status.OK and scores.get(c["pk"], 0) != n_criteria:
                bad(
                    "ok call without one score per criterion", c, f"{scores.get(c['pk'], 0)} scores"
                )
        elif c["status"] != JudgeCall.Status.PENDING:
            if billed:
                bad("call without an answer that the server billed (a lost answer)", c, str(billed))
            if cost:
                bad("failed call with a cost", c, str(cost))
    stray = [k for k in per_key if k not in seen_keys]
    if stray:
        problems.append(
            f"{len(stray)} prompts asked of the server that belong to no call of the run"
        )
    if not expect_cached:
        twice = (
            JudgeCall.objects.filter(run=run, cached_from__isnull=True, cost__gt=0)
            .values("judge_id", "prompt_hash")
            .annotate(n=Count("id"))
            .filter(n__gt=1)
            .count()
        )
        if twice:
            problems.append(f"{twice} (judge, prompt hash) pairs billed by more than one call")
        if server["total_requests"] != attempts_total:
            problems.append(
                f"server saw {server['total_requests']} requests, the calls record {attempts_total} attempts"
            )
        if cost_total != expected_cost:
            problems.append(
                f"sum of JudgeCall.cost {cost_total} != billed tokens x prices {expected_cost}"
            )
    elif server["total_requests"]:
        problems.append(f"{server['total_requests']} requests reached the server for a cached run")
    leases = JudgeLease.objects.filter(call__run=run).count()
    if leases:
        problems.append(f"{leases} leases left behind")
    for kind, n in mismatches.items():
        problems.append(f"{n} calls: {kind} (e.g. {examples[kind]})")
    db_sum = JudgeCall.objects.filter(run=run).aggregate(s=Sum("cost"))["s"] or Decimal(0)
    lines = [
        f"calls {len(calls):,}: ok {ok:,} + failed {failed:,} = {ok + failed:,}; pending {pending}; "
        f"by status {dict(by_status)}",
        f"attempts recorded {attempts_total:,}; requests seen by the server {server['total_requests']:,} "
        f"(outcomes {server['per_outcome']})",
        f"cost in the database {db_sum} ; billed by the server x prices {expected_cost}"
        + ("" if not expect_cached else " (cached run: both must be 0)"),
    ]
    return lines, problems


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
    from django.db.models import Avg

    from jury.models import JudgeCall

    run, server = result["run"], result["server"]
    problems = []
    calls = JudgeCall.objects.filter(run=run)
    total = calls.count()
    wall = result["wall"]
    ratio = wall / wall_ideal if wall_ideal else float("nan")
    lat = calls.filter(cached_from__isnull=True, latency_ms__isnull=False).aggregate(
        a=Avg("latency_ms")
    )["a"]
    in_flight = {j.model_id: server["max_in_flight_by_model"].get(j.model_id, 0) for j in judges}
    over = {m: n for m, n in in_flight.items() if n > concurrency}
    if over:
        problems.append(f"more requests in flight than allowed: {over} (limit {concurrency})")
    if not result["finished"]:
        problems.append("the run did not finish before the timeout")
    rows = [
        ["calls", f"{total:,}"],
        ["wall (first task sent -> run finished_at)", f"{wall:.2f} s"],
        ["ideal (calls x latency / total concurrency)", f"{wall_ideal:.2f} s"],
        [
            "ratio wall / ideal (target <= 1.25)",
            f"{ratio:.2f}"
            + (
                " (no provider call: for scale only)"
                if cached
                else " met"
                if ratio <= 1.25
                else " NOT met"
            ),
        ],
        ["calls/s", f"{total / wall:.1f}" if wall > 0 else "-"],
        [
            "provider requests; mean in flight (requests x latency / wall)",
            f"{server['total_requests']:,}; {server['total_requests'] * latency / wall:.1f} of "
            f"{concurrency * len(judges)}"
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
    print_table(["phase: " + result["name"], "value"], rows)
    print(timeline(result))
    if result["cpu"]:
        budget = (os.cpu_count() or 1) * max(result["polled_wall"], 1e-9)
        print(
            f"CPU during the phase ({budget:.0f} core-s available over {result['polled_wall']:.1f} s): "
            + ", ".join(
                f"{k} {v:.1f} s ({100 * v / budget:.0f}%)" for k, v in result["cpu"].items()
            )
        )
        if result["cpu_others"]:
            print(
                "  everything else, by process: "
                + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in result["cpu_others"])
            )
    s = result["sampler"]
    if s.samples:
        print(
            f"PostgreSQL ({s.samples} samples of pg_stat_activity): active backends mean "
            f"{sum(s.active) / s.samples:.1f}, max {max(s.active)}; waiting on a lock mean "
            f"{sum(s.waiting) / s.samples:.2f}, max {max(s.waiting)}, in "
            f"{100 * sum(1 for w in s.waiting if w) / s.samples:.0f}% of samples; "
            f"{result['rollbacks']} rollbacks, {result['deadlocks']} deadlocks"
        )
        for stmt, n in s.waiting_statements.most_common(3):
            print(f"  waiting x{n}: {stmt}")
    return problems


def report_instrumentation(workers: Workers, n_calls: int) -> None:
    """Figures per judge call (all calls of the bench: warm-up and the three phases)."""
    merged_phases: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    merged_sql: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    acquire: Counter[str] = Counter()
    thread_cpu: Counter[str] = Counter()
    profiles: list[str] = []
    loop_profiles: list[str] = []
    main_profiles: list[str] = []
    for out in workers.instrument_out:
        if not out.exists():
            print(f"(no instrumentation from {out.name}: the worker did not shut down cleanly)")
            continue
        data = json.loads(out.read_text())
        for k, v in data["phases"].items():
            for i, x in enumerate(v):
                merged_phases[k][i] += x
        for k, v in data["sql"].items():
            for i, x in enumerate(v):
                merged_sql[k][i] += x
        acquire.update(data["acquire"])
        for k, v in data.get("threads", {}).items():
            thread_cpu[k] += v
        if out.with_suffix(".prof").exists():
            profiles.append(str(out.with_suffix(".prof")))
        if out.with_suffix(".loop.prof").exists():
            loop_profiles.append(str(out.with_suffix(".loop.prof")))
        if out.with_suffix(".main.prof").exists():
            main_profiles.append(str(out.with_suffix(".main.prof")))
    n_tasks = sum(
        merged_phases.get(k, [0])[0]
        for k in ("execute_call (whole task body)", "execute_calls (whole chunk task body)")
    )
    tasks = n_calls or 1  # the denominator: per call
    print(
        f"\ninstrumented worker(s), whole bench (warm-up and all phases): {n_calls:,} calls in "
        f"{int(n_tasks):,} tasks; limiter acquire outcomes (per-call path) {dict(acquire)}"
    )
    print(
        "worker CPU per call by thread: "
        + ", ".join(
            f"{k} {1000 * v / tasks:.2f} ms"
            for k, v in sorted(thread_cpu.items(), key=lambda kv: -kv[1])
        )
    )
    rows = [
        [
            k,
            f"{int(v[0]):,}",
            f"{v[0] / tasks:.2f}",
            f"{1000 * v[1] / v[0]:.2f}",
            f"{1000 * v[2] / v[0]:.2f}",
            f"{1000 * v[1] / tasks:.1f}",
            f"{1000 * v[2] / tasks:.2f}",
        ]
        for k, v in sorted(merged_phases.items(), key=lambda kv: -kv[1][1])
    ]
    print_table(
        [
            "phase",
            "count",
            "per call",
            "wall ms each",
            "CPU ms each",
            "wall ms per call",
            "CPU ms per call",
        ],
        rows,
    )
    n_sql = sum(v[0] for v in merged_sql.values())
    print(f"\nSQL: {n_sql / tasks:.1f} statements per call (COMMIT included), by kind:")
    rows = [
        [
            k,
            f"{int(v[0]):,}",
            f"{v[0] / tasks:.2f}",
            f"{1000 * v[1] / v[0]:.2f}",
            f"{1000 * v[1] / tasks:.2f}",
        ]
        for k, v in sorted(merged_sql.items(), key=lambda kv: -kv[1][1])
    ]
    print_table(["statement", "count", "per call", "wall ms each", "wall ms per call"], rows)
    import io
    import pstats

    for found, what in (
        (profiles, "the task bodies (their threads)"),
        (loop_profiles, "the event loop's thread (provider requests, Redis tokens)"),
        (main_profiles, "the main thread (Celery's consumer)"),
    ):
        if not found:
            continue
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


# --- main ------------------------------------------------------------------------------------


def app_env(db_url: str, redis_url: str, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in APP_SETTINGS}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "medhelm_site.settings",
            "DJANGO_DEBUG": "0",
            "SECRET_KEY": "bench-jury-" + "x" * 50,
            "ALLOWED_HOSTS": "127.0.0.1",
            "DATABASE_URL": db_url,
            "DATABASE_CONN_MAX_AGE": "60",
            "CELERY_BROKER_URL": redis_url,
            "CELERY_RESULT_BACKEND": redis_url,
            "MEDHELM_DATA_DIR": str(data_dir),
            "MEDHELM_AFTER_IMPORT_TASKS": "",
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
            API_KEY_ENV: "sk-bench-jury-0000",
        }
    )
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="smoke run: 200 items")
    # Two processes (one per core of the reference machine), each with one event loop for the
    # provider requests and six task threads, i.e. six chunks at once: a chunk's task lasts
    # until its slowest call (a retry after a 429 or 500) ends, and meanwhile the others keep
    # enough calls waiting for every slot.
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes")
    parser.add_argument("--threads", type=int, default=6, help="threads per worker process")
    parser.add_argument("--latency", type=float, default=0.1, help="provider latency, seconds")
    parser.add_argument("--concurrency", type=int, default=16, help="max_concurrency per judge")
    parser.add_argument("--failure-rate", type=float, default=0.05, help="phase 2")
    parser.add_argument(
        "--retry-after",
        type=float,
        default=0.2,
        help="Retry-After of the phase-2 429s, seconds (default 0.2: the check there is "
        "accounting; a real provider's 1-60 s would dominate the wall time)",
    )
    parser.add_argument("--database-url", default=DEFAULT_DB_URL)
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    parser.add_argument(
        "--instrument", action="store_true", help="phase timers and SQL counts in the worker"
    )
    parser.add_argument(
        "--cprofile", action="store_true", help="cProfile in the worker (implies --instrument)"
    )
    parser.add_argument("--drop", action="store_true", help="drop the bench database at the end")
    parser.add_argument("--internal", choices=["server", "worker"], help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.internal == "server":
        serve_fake_provider(json.loads(rest[0]))
        return 0
    if args.internal == "worker":
        run_instrumented_worker(rest)
        return 0
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.quick:
        args.items = 200
    try:
        with sigterm_as_exit():
            return bench(args)
    except KeyboardInterrupt:
        print("interrupted: workers and the fake provider stopped", file=sys.stderr)
        return 130


def exclusive_run(url: str, redis_url: str) -> Any:
    """A session advisory lock (on the maintenance database) named after the bench database and
    Redis database: a second bench_jury on the same ones would drop the first one's database
    under its workers. Returns the connection holding the lock; closing it releases the lock."""
    import psycopg

    conn = psycopg.connect(maintenance_url(url), autocommit=True)
    name = f"bench_jury {db_name(url)} {redis_url}"
    if not conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (name,)).fetchone()[0]:
        conn.close()
        raise SystemExit(
            f"another bench_jury run is using database {db_name(url)} or {redis_url}: wait for "
            "it, or give this one --database-url and --redis-url of its own"
        )
    return conn


def bench(args: argparse.Namespace) -> int:
    url = args.database_url
    lock = exclusive_run(url, args.redis_url)
    try:
        return _bench(args)
    finally:
        lock.close()


def _bench(args: argparse.Namespace) -> int:
    url = args.database_url
    load_before = os.getloadavg()
    data_dir = Path(tempfile.mkdtemp(prefix="bench_jury_"))
    env = app_env(url, args.redis_url, data_dir)
    server: FakeServer | None = None
    workers: Workers | None = None
    problems: dict[str, list[str]] = {}
    try:
        t0 = time.perf_counter()
        recreate_database(url)
        redis_pid = flush_redis(args.redis_url)
        _, t_migrate = run_step([PYTHON, "manage.py", "migrate", "--noinput"], env, "migrate")
        t_setup = time.perf_counter() - t0
        os.environ.update(env)  # this process runs start_run and the checks on the same settings
        for k in APP_SETTINGS - set(env):
            os.environ.pop(k, None)
        django_setup()
        import medhelm_site.celery  # noqa: F401 - binds the tasks to the app on Redis

        server = FakeServer(args.latency, data_dir / "fake-provider.log")
        t0 = time.perf_counter()
        seeded = seed(args.items, server.url, args.concurrency)
        t_seed = time.perf_counter() - t0
        judges, studies, user = seeded["judges"], seeded["studies"], seeded["user"]

        workers = Workers(env, args.workers, args.threads, data_dir, args.instrument, args.cprofile)
        cpu = CpuMeter(workers, server, url, redis_pid)
        n_judges = len(judges)
        ideal = args.items * n_judges * args.latency / (n_judges * args.concurrency)
        timeout = max(120.0, 20 * ideal)
        common = {"judges": judges, "user": user, "server": server, "workers": workers, "url": url}

        # Warm-up: the workers start, import the SDKs and open connections in every thread.
        t0 = time.perf_counter()
        server.configure(latency=args.latency, failure_rate=0.0)
        warm = run_phase(name="warm-up", study=studies["warmup"], cpu=None, timeout=180, **common)
        if not warm["finished"]:
            raise SystemExit(
                "the warm-up run did not finish: are the workers up?\n" + workers.tail(0)
            )
        t_warm = time.perf_counter() - t0

        server.configure(latency=args.latency, failure_rate=0.0)
        server.reset()
        p1 = run_phase(
            name="1: no failures", study=studies["phase1"], cpu=cpu, timeout=timeout, **common
        )

        server.configure(
            latency=args.latency,
            failure_rate=args.failure_rate,
            failure_outcomes=["429", "500"],
            retry_after=args.retry_after,
            seed=2,
        )
        server.reset()
        p2 = run_phase(
            name=f"2: {100 * args.failure_rate:g}% 429/500 (Retry-After {args.retry_after:g} s)",
            study=studies["phase2"],
            cpu=cpu,
            timeout=timeout,
            **common,
        )

        server.configure(latency=args.latency, failure_rate=0.0)
        server.reset()
        p3 = run_phase(
            name="3: phase 1 again (cache)",
            study=studies["phase1"],
            cpu=cpu,
            timeout=timeout,
            **common,
        )
        load_after = os.getloadavg()
        workers.stop()

        # --- report -----------------------------------------------------------------------
        from importlib.metadata import version

        import psycopg

        with psycopg.connect(url) as conn:
            pg_version = conn.execute("SHOW server_version").fetchone()[0]
        print(
            f"\nbench_jury: {args.items:,} items x {n_judges} judges "
            f"({', '.join(f'{j.name} [{j.provider}]' for j in judges)}), provider latency "
            f"{1000 * args.latency:g} ms, max_concurrency {args.concurrency} per judge, no RPM limit, "
            "max_attempts 6"
        )
        print(
            f"machine: {os.cpu_count()} cores (os.cpu_count), load average before {load_before[0]:.2f}, "
            f"after {load_after[0]:.2f}; shared with other jobs, so figures are noisy"
        )
        print(
            f"software: Python {sys.version.split()[0]}, Django {version('django')}, Celery "
            f"{version('celery')}, openai {version('openai')}, anthropic {version('anthropic')}, "
            f"PostgreSQL {pg_version}, Redis broker {args.redis_url}"
        )
        print(f"workers: {args.workers} x `{workers.command}`, DEBUG off, CONN_MAX_AGE=60")
        print(
            f"setup: create db + migrate {t_setup:.1f} s (migrate {t_migrate:.1f} s), seed {t_seed:.1f} s, "
            f"worker start + warm-up run ({WARMUP_ITEMS} items) {t_warm:.1f} s"
        )
        for result, checks_cached, label in (
            (p1, False, "accounting"),
            (p2, False, "accounting"),
            (p3, True, "cache check"),
        ):
            print()
            ph = report_phase(
                result,
                judges=judges,
                concurrency=args.concurrency,
                latency=args.latency,
                wall_ideal=ideal,
                cached=checks_cached,
            )
            lines, acc = accounting(result, judges, expect_cached=checks_cached)
            print(f"{label}:")
            for line in lines:
                print(f"  {line}")
            found = ph + acc
            problems[result["name"]] = found
            if checks_cached:
                verdict = "all served from the cache, 0 provider requests, cost 0"
            else:
                verdict = "none lost, none billed twice"
            if found:
                print(f"  -> FAILED: {len(found)} discrepancies")
                for p in found:
                    print(f"     - {p}")
            else:
                print(f"  -> {verdict}")
        if args.instrument or args.cprofile:
            from jury.models import JudgeCall

            runs = [phase["run"] for phase in (warm, p1, p2, p3)]
            report_instrumentation(workers, JudgeCall.objects.filter(run__in=runs).count())
    finally:
        if workers is not None:
            workers.stop()
        if server is not None:
            server.stop()
        with contextlib.suppress(Exception):
            flush_redis(args.redis_url)
        shutil.rmtree(data_dir, ignore_errors=True)
        if args.drop:
            drop_database(url)
        else:
            print(f"database {db_name(url)} kept for inspection (--drop removes it)")
    failed = [name for name, found in problems.items() if found]
    if failed:
        print(f"\nFAILED phases: {failed}")
    return 1 if failed or len(problems) < 3 else 0


if __name__ == "__main__":
    sys.exit(main())
