"""Rating page and submit endpoint under concurrent simulated clinicians, on a production server.

    .venv/bin/python bench/bench_rating.py [--clinicians 50] [--duration 20] [--quick] [--drop]
        [--database-url postgres://postgres@127.0.0.1:5432/medhelm_bench]
        [--workers 4] [--threads 4] [--keepalive] [--think 0] [--items 2000] [--show-queries]

1. Drops and recreates a PostgreSQL database (default medhelm_bench), migrates it, runs
   collectstatic into a temporary MEDHELM_DATA_DIR and seeds one study through the services
   (create_study, add_member, create_items, assign_items): 2,000 items x k=2 over the clinicians,
   MedHELM rubric (3 criteria, 1-5). Users, DRF tokens and logged-in sessions are created in bulk
   (sessions server-side, so no password hashing is timed or needed).
2. Starts gunicorn (gthread, 4 workers x 4 threads by default: 2 cores, with PostgreSQL on the
   same machine and requests that wait on the database) with production settings: DEBUG off,
   manifest static storage, CONN_MAX_AGE=60, and an access log giving each request's worker
   and its time inside the worker.
3. Baseline: the same number of clients GET /accounts/login/ (a template, no database query for
   an anonymous visitor) for the same duration.
4. Rating: each simulated clinician loops, by default without think time (a stress test):
   GET /studies/<id>/rate/ (302 to the next item), GET the rating page it points to (session
   cookie), POST /api/assignments/<a>/submit/ with token auth and valid values. A stdlib asyncio
   HTTP/1.1 client measures each request; by default it opens a new connection per request, as
   a reverse proxy does (--keepalive: one persistent connection per clinician, as browsers
   talking to gunicorn directly; gunicorn then binds each connection to one worker).
5. Prints per endpoint: requests, errors (any status >= 400, or no response), p50/p95/p99 ms as
   the client saw them, requests/s, p50/p95 inside the worker, and p50 as a ratio to the
   baseline's p50; requests per worker; CPU seconds of gunicorn, PostgreSQL, the load generator
   and everything else on the machine; lock waits sampled from pg_stat_activity; queries per
   request (Django test client, unloaded).
6. Checks integrity in the database: every submitted assignment has exactly one complete rating
   per criterion, the submitted set equals the set answered 200, one audit row per rating, no
   5xx. Exit status 1 if a check fails. gunicorn is stopped on exit, Ctrl-C or SIGTERM.

The load generator, gunicorn and PostgreSQL share the machine's cores (and other people's jobs
may run there too): figures are noisy; compare runs on the same machine only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

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
    pg_backend_pids,
    pg_stats,
    print_table,
    recreate_database,
    run_step,
    sigterm_as_exit,
)

GUNICORN = str(VENV_BIN / "gunicorn")
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/medhelm_bench"
JSON_MARK = "BENCH_JSON:"


# --- seeding and query counts: run in a subprocess with the app's settings ------------------


def _case_texts(i: int, rng: random.Random) -> tuple[str, str, str]:
    """Input, reference and output text of realistic length, with some of the markdown the
    rating page renders (lists, bold, code)."""
    age, sex = rng.randint(18, 92), rng.choice(["woman", "man"])
    drug = rng.choice(["metformin", "apixaban", "lisinopril", "amoxicillin", "atorvastatin"])
    input_text = (
        f"Case {i}. A {age}-year-old {sex} presents with two days of fever, productive cough and "
        f"pleuritic chest pain. Past history: type 2 diabetes on {drug}, hypertension. Vitals: "
        "temperature 38.6 C, heart rate 104, respiratory rate 24, SpO2 91% on room air, blood "
        "pressure 128/76. Chest X-ray shows right lower lobe consolidation. Creatinine 1.4 mg/dL, "
        "urea 9 mmol/L.\n\nWhat is the most appropriate initial management, and where should "
        "the patient be treated?"
    )
    reference = (
        "CURB-65 score 2 (urea > 7 mmol/L, respiratory rate >= 30 is absent, age): consider "
        "short inpatient stay. Start empirical antibiotics per local guidance for moderate "
        "community-acquired pneumonia (e.g. amoxicillin plus a macrolide), oxygen to target "
        f"94-98%, fluids, review {drug} given the creatinine, and reassess at 48 hours."
    )
    bullets = "\n".join(
        f"- **{head}**: {body}"
        for head, body in [
            (
                "Severity",
                "CURB-65 of 2 suggests moderate severity; hospital assessment is advised.",
            ),
            (
                "Antibiotics",
                "amoxicillin 500 mg three times daily plus clarithromycin 500 mg twice daily.",
            ),
            ("Oxygen", "titrate to SpO2 94-98%; monitor respiratory rate and mental status."),
            ("Kidneys", f"hold `{drug}` if eGFR falls; recheck creatinine in 24-48 hours."),
            (
                "Follow-up",
                "clinical review at 48-72 hours; repeat chest X-ray at 6 weeks if over 50.",
            ),
        ]
    )
    output = (
        f"## Assessment\n\nThis {age}-year-old {sex} most likely has *community-acquired "
        "pneumonia* of moderate severity.\n\n"
        f"## Plan\n\n{bullets}\n\n"
        "1. Admit to a general medical ward.\n2. Blood and sputum cultures before antibiotics.\n"
        "3. Safety-net advice on discharge.\n\n"
        + " ".join(["Reassess daily and step down to oral therapy when afebrile for 48 hours."] * 6)
    )
    return input_text, reference, output


def _internal_seed(params: dict[str, Any]) -> dict[str, Any]:
    django_setup()
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.contrib.auth.hashers import make_password
    from django.contrib.sessions.backends.db import SessionStore
    from rest_framework.authtoken.models import Token

    from annotation import services
    from annotation.models import Assignment, StudyMembership

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    user_model = get_user_model()
    # Unusable passwords: sessions are made here, so nobody logs in with a password.
    coordinator = user_model.objects.create(
        username="bench-coordinator", password=make_password(None)
    )
    users = user_model.objects.bulk_create(
        [
            user_model(
                username=f"bench-clinician-{n:03d}",
                email=f"bench-clinician-{n:03d}@example.org",
                password=make_password(None),
            )
            for n in range(params["clinicians"])
        ]
    )
    tokens = Token.objects.bulk_create([Token(key=Token.generate_key(), user=u) for u in users])
    sessions = []
    for u in users:
        s = SessionStore()
        s[SESSION_KEY] = str(u.pk)
        s[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        s[HASH_SESSION_KEY] = u.get_session_auth_hash()
        s.create()
        sessions.append(s.session_key)
    timings["users, tokens, sessions (bulk)"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    template = services.ensure_medhelm_rubric_template()
    study = services.create_study(
        name="bench: rating under load",
        created_by=coordinator,
        criteria=template.criteria,
        ratings_per_item=params["k"],
    )
    for u in users:
        services.add_member(
            study=study, user=u, role=StudyMembership.Role.CLINICIAN, actor=coordinator
        )
    timings["create_study + add_member x clinicians"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    rng = random.Random(7)
    models = ("model-a", "model-b")
    rows = []
    for i in range(params["items"]):
        input_text, reference, output = _case_texts(i // len(models), rng)
        rows.append(
            services.ItemRow(
                external_id=f"case-{i // len(models):05d}",
                input_text=input_text,
                reference_text=reference,
                output_text=output,
                model_name=models[i % len(models)],
            )
        )
    services.create_items(study=study, rows=rows, actor=coordinator)
    timings["create_items"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    services.assign_items(study=study, actor=coordinator, seed=7)
    timings["assign_items"] = time.perf_counter() - t0

    return {
        "study_id": study.pk,
        "criteria": [
            {"key": c.key, "min": c.scale_min, "max": c.scale_max} for c in study.criteria.all()
        ],
        "items": study.items.count(),
        "assignments": Assignment.objects.filter(study=study).count(),
        "clinicians": [
            {"username": u.username, "user_id": u.pk, "token": t.key, "session": s}
            for u, t, s in zip(users, tokens, sessions, strict=True)
        ],
        "timings": timings,
    }


def _internal_queries(params: dict[str, Any]) -> dict[str, Any]:
    """Queries issued by one resume redirect, one rating page and one submit, unloaded."""
    django_setup()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    user = get_user_model().objects.get(username=params["username"])
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    sid = params["study_id"]
    out: dict[str, Any] = {}

    def capture(name: str, fn) -> Any:
        t0 = time.perf_counter()
        with CaptureQueriesContext(connection) as ctx:
            response = fn()
        out[name] = {
            "status": response.status_code,
            "wall": time.perf_counter() - t0,
            "count": len(ctx.captured_queries),
            "queries": [(q["time"], q["sql"]) for q in ctx.captured_queries],
        }
        return response

    # Warm this process up first (URL resolvers, templates, DRF): the second request counts.
    warm = client.get(client.get(f"/studies/{sid}/rate/")["Location"])
    assert warm.status_code == 200, warm.status_code
    client.post("/api/assignments/0/submit/", data="{}", content_type="application/json")
    response = capture("resume", lambda: client.get(f"/studies/{sid}/rate/"))
    path = response["Location"]
    aid = int(path.rstrip("/").rsplit("/", 1)[1])
    capture("rating page", lambda: client.get(path))
    answers = {c["key"]: {"value": c["max"]} for c in params["criteria"]}
    capture(
        "submit",
        lambda: client.post(
            f"/api/assignments/{aid}/submit/",
            data=json.dumps({"answers": answers, "time_spent_seconds": 30.0}),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Token {params['token']}",
        ),
    )
    out["assignment_id"] = aid
    return out


def run_internal(mode: str) -> None:
    params = json.loads(os.environ["BENCH_PARAMS"])
    result = {"seed": _internal_seed, "queries": _internal_queries}[mode](params)
    print(JSON_MARK + json.dumps(result))


# --- PostgreSQL ------------------------------------------------------------------------------


def integrity(url: str, study_id: int, ok_submits: set[int]) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(url) as conn:
        n_criteria = conn.execute(
            "SELECT count(*) FROM annotation_rubriccriterion WHERE study_id = %s", (study_id,)
        ).fetchone()[0]
        submitted = {
            r[0]
            for r in conn.execute(
                "SELECT id FROM annotation_assignment WHERE study_id = %s AND status = 'submitted'",
                (study_id,),
            )
        }
        # Per submitted assignment: ratings, distinct criteria of this study, complete values.
        bad = conn.execute(
            """
            SELECT a.id, count(r.id), count(DISTINCT c.id),
                   count(r.id) FILTER (WHERE r.value IS NOT NULL AND r.first_submitted_at IS NOT NULL)
            FROM annotation_assignment a
            LEFT JOIN annotation_rating r ON r.assignment_id = a.id
            LEFT JOIN annotation_rubriccriterion c ON c.id = r.criterion_id AND c.study_id = a.study_id
            WHERE a.study_id = %s AND a.status = 'submitted'
            GROUP BY a.id
            HAVING count(r.id) <> %s OR count(DISTINCT c.id) <> %s
                OR count(r.id) FILTER (WHERE r.value IS NOT NULL AND r.first_submitted_at IS NOT NULL) <> %s
            """,
            (study_id, n_criteria, n_criteria, n_criteria),
        ).fetchall()
        stray = conn.execute(
            """SELECT count(*) FROM annotation_rating r JOIN annotation_assignment a
               ON a.id = r.assignment_id WHERE a.study_id = %s AND a.status <> 'submitted'""",
            (study_id,),
        ).fetchone()[0]
        audits = conn.execute(
            "SELECT count(*) FROM annotation_auditevent WHERE study_id = %s AND action = 'rating.submit'",
            (study_id,),
        ).fetchone()[0]
    return {
        "criteria": n_criteria,
        "submitted": len(submitted),
        "bad": bad,
        "stray_ratings": stray,
        "audit_rows": audits,
        "matches_client": submitted == ok_submits,
        "only_in_db": len(submitted - ok_submits),
        "only_in_client": len(ok_submits - submitted),
    }


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
                        """SELECT state, wait_event_type, left(regexp_replace(query, '\\s+', ' ', 'g'), 140)
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


# --- processes -------------------------------------------------------------------------------


def run_internal_step(mode: str, params: dict[str, Any], env: dict[str, str]) -> tuple[Any, float]:
    out, elapsed = run_step(
        [PYTHON, __file__, "--internal", mode],
        {**env, "BENCH_PARAMS": json.dumps(params)},
        f"{mode} subprocess",
    )
    line = next(x for x in reversed(out.splitlines()) if x.startswith(JSON_MARK))
    return json.loads(line[len(JSON_MARK) :]), elapsed


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_pids(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def connections_per_worker(port: int, workers: list[int]) -> list[int]:
    """Established client connections held by each gunicorn worker (from ss -tnp)."""
    try:
        out = subprocess.run(
            ["ss", "-Htnp", "state", "established", f"( sport = :{port} )"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    owners = Counter(int(m) for m in re.findall(r"pid=(\d+)", out))
    return [owners.get(w, 0) for w in workers]


class Gunicorn:
    def __init__(self, env: dict[str, str], workers: int, threads: int, log_path: Path) -> None:
        self.port = free_port()
        self.workers, self.threads = workers, threads
        self.log_path = log_path
        self.cmd = [
            GUNICORN,
            "medhelm_site.wsgi",
            "-w",
            str(workers),
            "-k",
            "gthread",
            "--threads",
            str(threads),
            "-b",
            f"127.0.0.1:{self.port}",
            "--graceful-timeout",
            "10",
            # Per request: worker pid, status, time in the worker (microseconds), request line.
            "--access-logfile",
            str(log_path.with_name("access.log")),
            "--access-logformat",
            '%(p)s %(s)s %(D)s "%(r)s"',
        ]
        self.access_path = log_path.with_name("access.log")
        self.log = open(log_path, "w")  # noqa: SIM115 - closed in stop()
        # Its own session: a Ctrl-C in the terminal reaches this script, which stops it.
        self.proc = subprocess.Popen(
            self.cmd,
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 60.0) -> None:
        import http.client

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"gunicorn exited ({self.proc.returncode}):\n{self.tail()}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/accounts/login/")
                if conn.getresponse().status == 200 and len(self.worker_pids()) >= self.workers:
                    return
            except OSError:
                pass
            time.sleep(0.3)
        raise SystemExit(f"gunicorn did not answer within {timeout:.0f} s:\n{self.tail()}")

    def worker_pids(self) -> list[int]:
        return child_pids(self.proc.pid)

    def access_offset(self) -> int:
        try:
            return self.access_path.stat().st_size
        except OSError:
            return 0

    def access_records(self, start: int, end: int) -> list[tuple[int, int, float, str, str]]:
        """(worker pid, status, seconds in the worker, method, path) logged between offsets."""
        with open(self.access_path, "rb") as f:
            f.seek(start)
            text = f.read(end - start).decode("latin-1")
        records = []
        for m in re.finditer(r'^<(\d+)> (\d+) (\d+) "(\S+) (\S+)', text, re.M):
            path = urlsplit(m.group(5)).path
            records.append(
                (int(m.group(1)), int(m.group(2)), int(m.group(3)) / 1e6, m.group(4), path)
            )
        return records

    def tail(self, n: int = 30) -> str:
        self.log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


# --- the load generator: asyncio, HTTP/1.1 keep-alive, stdlib only ----------------------------


class HttpError(Exception):
    pass


@dataclass
class Response:
    status: int
    headers: dict[str, list[str]]
    body: bytes

    def header(self, name: str) -> str:
        values = self.headers.get(name, [])
        return values[-1] if values else ""


class Connection:
    """One keep-alive connection; reconnects when the server closed it between requests."""

    keepalive = True  # False: "Connection: close", a new TCP connection per request

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.cookies: dict[str, str] = {}

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def request(
        self, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b""
    ) -> Response:
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        hdrs = {"Accept": "*/*", "User-Agent": "bench_rating", **(headers or {})}
        if not self.keepalive:
            hdrs["Connection"] = "close"
        if self.cookies:
            hdrs["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if body or method in ("POST", "PUT"):
            hdrs["Content-Length"] = str(len(body))
        lines += [f"{k}: {v}" for k, v in hdrs.items()]
        raw = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        for attempt in range(2):
            reused = self.writer is not None
            if not reused:
                self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            assert self.reader is not None and self.writer is not None
            try:
                self.writer.write(raw)
                await self.writer.drain()
                status_line = await self.reader.readline()
                if not status_line:
                    raise ConnectionResetError("server closed the connection")
            except (ConnectionError, asyncio.IncompleteReadError):
                self.close()
                if reused and attempt == 0:
                    continue  # a keep-alive connection the server had closed: once more
                raise
            return await self._read_rest(status_line)
        raise HttpError("unreachable")

    async def _read_rest(self, status_line: bytes) -> Response:
        assert self.reader is not None
        parts = status_line.decode("latin-1").split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            self.close()
            raise HttpError(f"bad status line {status_line!r}")
        status = int(parts[1])
        headers: dict[str, list[str]] = {}
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers.setdefault(name.strip().lower(), []).append(value.strip())
        if "content-length" in headers:
            body = await self.reader.readexactly(int(headers["content-length"][-1]))
        elif "chunked" in ",".join(headers.get("transfer-encoding", [])).lower():
            chunks = []
            while True:
                size = int((await self.reader.readline()).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while (await self.reader.readline()) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(await self.reader.readexactly(size))
                await self.reader.readline()
            body = b"".join(chunks)
        else:
            body = await self.reader.read()
            self.close()
        for cookie in headers.get("set-cookie", []):
            name, _, rest = cookie.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        if parts[0] == "HTTP/1.0" or "close" in ",".join(headers.get("connection", [])).lower():
            self.close()
        return Response(status, headers, body)


@dataclass
class Endpoint:
    label: str
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    errors: int = 0
    server_errors: int = 0
    content_errors: int = 0


@dataclass
class Phase:
    name: str
    endpoints: dict[str, Endpoint]
    elapsed: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)
    connections: list[int] = field(default_factory=list)  # per worker, halfway through
    per_worker: list[int] = field(default_factory=list)  # requests served, from the access log
    server: dict[str, list[float]] = field(default_factory=dict)  # seconds in the worker

    def take_access_log(self, server: Gunicorn, start: int, end: int, workers: list[int]) -> None:
        served: Counter[int] = Counter()
        for pid, _status, seconds, method, path in server.access_records(start, end):
            served[pid] += 1
            self.server.setdefault(classify(method, path), []).append(seconds)
        self.per_worker = [served.get(w, 0) for w in workers]


def classify(method: str, path: str) -> str:
    if path == "/accounts/login/":
        return "login"
    if re.fullmatch(r"/studies/\d+/rate/", path):
        return "resume"
    if re.fullmatch(r"/studies/\d+/rate/\d+/", path):
        return "page"
    if method == "POST" and re.fullmatch(r"/api/assignments/\d+/submit/", path):
        return "submit"
    return "other"


async def timed(
    ep: Endpoint, conn: Connection, method: str, path: str, **kw: Any
) -> Response | None:
    t0 = time.perf_counter()
    try:
        response = await conn.request(method, path, **kw)
    except (OSError, HttpError, asyncio.IncompleteReadError, ValueError) as exc:
        ep.latencies.append(time.perf_counter() - t0)
        ep.statuses[type(exc).__name__] += 1
        ep.errors += 1
        conn.close()
        return None
    ep.latencies.append(time.perf_counter() - t0)
    ep.statuses[str(response.status)] += 1
    if response.status >= 400:
        ep.errors += 1
    if response.status >= 500:
        ep.server_errors += 1
    return response


@dataclass
class Clinician:
    username: str
    token: str
    session: str
    exhausted: bool = False
    submitted: list[int] = field(default_factory=list)


async def baseline_client(port: int, deadline: float, ep: Endpoint) -> None:
    conn = Connection("127.0.0.1", port)
    try:
        while time.perf_counter() < deadline:
            response = await timed(ep, conn, "GET", "/accounts/login/")
            if response is not None and b'name="csrfmiddlewaretoken"' not in response.body:
                ep.content_errors += 1
    finally:
        conn.close()


async def clinician_client(
    port: int,
    study_id: int,
    criteria: list[dict[str, Any]],
    clinician: Clinician,
    deadline: float,
    eps: dict[str, Endpoint],
    rng: random.Random,
    submit: bool = True,
    think: float = 0.0,
) -> None:
    conn = Connection("127.0.0.1", port)
    conn.cookies["sessionid"] = clinician.session
    auth = {"Authorization": f"Token {clinician.token}", "Content-Type": "application/json"}
    failures = 0
    try:
        while time.perf_counter() < deadline and failures < 5:
            response = await timed(eps["resume"], conn, "GET", f"/studies/{study_id}/rate/")
            if response is None or response.status != 302:
                failures += 1
                continue
            path = urlsplit(response.header("location")).path
            match = re.fullmatch(rf"/studies/{study_id}/rate/(\d+)/", path)
            if match is None:  # the queue page: this clinician has rated everything
                clinician.exhausted = True
                return
            aid = int(match.group(1))
            page = await timed(eps["page"], conn, "GET", path)
            if page is None or page.status != 200:
                failures += 1
                continue
            if f'data-assignment="{aid}"'.encode() not in page.body:
                eps["page"].content_errors += 1
            if not submit:
                return
            answers = {c["key"]: {"value": rng.randint(c["min"], c["max"])} for c in criteria}
            body = json.dumps(
                {"answers": answers, "time_spent_seconds": round(rng.uniform(20, 240), 1)}
            ).encode()
            result = await timed(
                eps["submit"],
                conn,
                "POST",
                f"/api/assignments/{aid}/submit/",
                headers=auth,
                body=body,
            )
            if result is None or result.status != 200:
                failures += 1
                continue
            try:
                if json.loads(result.body).get("status") != "submitted":
                    eps["submit"].content_errors += 1
            except ValueError:
                eps["submit"].content_errors += 1
            clinician.submitted.append(aid)
            failures = 0
            if think > 0:  # reading and rating the next item, exponentially distributed
                pause = min(rng.expovariate(1 / think), deadline - time.perf_counter())
                if pause > 0:
                    await asyncio.sleep(pause)
    finally:
        conn.close()


class CpuMeter:
    """CPU seconds used during a phase by gunicorn's workers, the bench database's
    PostgreSQL backends and this process (the load generator)."""

    def __init__(self, server: Gunicorn, url: str) -> None:
        self.server, self.url = server, url

    def snapshot(self) -> dict[str, dict[int, float]]:
        return {
            "gunicorn": {
                p: cpu_seconds(p) for p in [self.server.proc.pid, *self.server.worker_pids()]
            },
            "postgres": {p: cpu_seconds(p) for p in pg_backend_pids(self.url)},
            "load generator": {os.getpid(): cpu_seconds(os.getpid())},
            "machine": {0: machine_busy_seconds()},
        }

    @staticmethod
    def delta(
        before: dict[str, dict[int, float]], after: dict[str, dict[int, float]]
    ) -> dict[str, float]:
        used = {k: sum(v - before[k].get(pid, 0.0) for pid, v in after[k].items()) for k in after}
        machine = used.pop("machine")
        used["everything else on the machine"] = max(0.0, machine - sum(used.values()))
        return used


async def run_phase(
    coros_factory, seconds: float, port: int | None = None, workers: list[int] | None = None
) -> tuple[float, list[int]]:
    """Run the clients until `seconds` have passed (requests under way finish); halfway
    through, count the client connections each gunicorn worker holds."""
    snap: list[int] = []

    async def probe() -> None:
        await asyncio.sleep(seconds / 2)
        snap.extend(await asyncio.to_thread(connections_per_worker, port, workers or []))

    t0 = time.perf_counter()
    probes = [probe()] if port else []
    await asyncio.gather(*probes, *coros_factory(t0 + seconds))
    return time.perf_counter() - t0, snap


# --- reporting ---------------------------------------------------------------------------------


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an already sorted list, in ms."""
    if not sorted_values:
        return float("nan")
    rank = max(1, min(len(sorted_values), int(-(-q * len(sorted_values) // 100))))
    return 1000 * sorted_values[rank - 1]


def endpoint_row(
    ep: Endpoint, elapsed: float, base_p50: float | None, server: list[float] | None
) -> list[str]:
    lat = sorted(ep.latencies)
    p50 = percentile(lat, 50)
    ratio = f"{p50 / base_p50:.1f}x" if base_p50 else "1.0x (baseline)"
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
    ]


def app_env(url: str, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in APP_SETTINGS}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "medhelm_site.settings",
            "DJANGO_DEBUG": "0",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1",
            "SECURE_SSL_REDIRECT": "0",
            "SESSION_COOKIE_SECURE": "0",
            "CSRF_COOKIE_SECURE": "0",
            "DATABASE_URL": url,
            "DATABASE_CONN_MAX_AGE": "60",
            "MEDHELM_DATA_DIR": str(data_dir),
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clinicians", type=int, default=50)
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per phase")
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--k", type=int, default=2, help="ratings per item")
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument(
        "--think",
        type=float,
        default=0.0,
        help="mean think time in seconds after each submit (default 0: no pause, a stress test)",
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: 10 clinicians, 5 s")
    parser.add_argument("--drop", action="store_true", help="drop the bench database at the end")
    parser.add_argument(
        "--keepalive",
        action="store_true",
        help="one persistent connection per clinician (default: a new connection per request, "
        "as from a proxy that does not keep upstream connections alive)",
    )
    parser.add_argument("--show-queries", action="store_true", help="print the SQL of each request")
    parser.add_argument("--internal", choices=["seed", "queries"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.internal:
        run_internal(args.internal)
        return 0
    if args.quick:
        args.clinicians, args.duration = 10, 5.0
    try:
        with sigterm_as_exit():
            return bench(args)
    except KeyboardInterrupt:
        print("interrupted: gunicorn stopped", file=sys.stderr)
        return 130


def bench(args: argparse.Namespace) -> int:
    url = args.database_url
    load_before = os.getloadavg()
    data_dir = Path(tempfile.mkdtemp(prefix="bench_rating_"))
    env = app_env(url, data_dir)
    server: Gunicorn | None = None
    ok = True
    try:
        t0 = time.perf_counter()
        recreate_database(url)
        t_create = time.perf_counter() - t0
        _, t_migrate = run_step([PYTHON, "manage.py", "migrate", "--noinput"], env, "migrate")
        _, t_static = run_step(
            [PYTHON, "manage.py", "collectstatic", "--noinput"], env, "collectstatic"
        )
        seed, t_seed = run_internal_step(
            "seed", {"clinicians": args.clinicians, "items": args.items, "k": args.k}, env
        )
        study_id, criteria = seed["study_id"], seed["criteria"]
        clinicians = [
            Clinician(c["username"], c["token"], c["session"]) for c in seed["clinicians"]
        ]

        server = Gunicorn(env, args.workers, args.threads, data_dir / "gunicorn.log")
        server.wait_ready()
        cpu = CpuMeter(server, url)

        # Warm-up: every worker thread loads templates, URLs and a database connection.
        warm = {k: Endpoint(k) for k in ("resume", "page", "submit", "login")}
        rng = random.Random(1)

        def warm_factory(deadline: float) -> list:
            tasks = [
                clinician_client(
                    server.port, study_id, criteria, c, deadline, warm, rng, submit=False
                )
                for c in clinicians
            ]
            return [*tasks, baseline_client(server.port, time.perf_counter() + 1.0, warm["login"])]

        asyncio.run(run_phase(warm_factory, 60.0))
        Connection.keepalive = args.keepalive
        if any(ep.errors for ep in warm.values()):
            print("warm-up errors:", {k: dict(ep.statuses) for k, ep in warm.items()})
        workers = server.worker_pids()

        # Baseline phase.
        base = Phase("baseline", {"login": Endpoint("GET /accounts/login/ (baseline)")})
        before = cpu.snapshot()
        log_start = server.access_offset()
        base.elapsed, base.connections = asyncio.run(
            run_phase(
                lambda d: [
                    baseline_client(server.port, d, base.endpoints["login"]) for _ in clinicians
                ],
                args.duration,
                server.port,
                workers,
            )
        )
        base.cpu = CpuMeter.delta(before, cpu.snapshot())
        time.sleep(0.3)  # the worker logs a request just after answering it
        base.take_access_log(server, log_start, server.access_offset(), workers)

        # Rating phase.
        rate = Phase(
            "rating",
            {
                "resume": Endpoint("GET /studies/<id>/rate/ (302)"),
                "page": Endpoint("GET /studies/<id>/rate/<a>/ (page)"),
                "submit": Endpoint("POST /api/assignments/<a>/submit/"),
            },
        )
        sampler = PgSampler(url)
        stats_before = pg_stats(url)
        before = cpu.snapshot()
        log_start = server.access_offset()
        sampler.start()
        rngs = [random.Random(1000 + i) for i in range(len(clinicians))]

        rate.elapsed, rate.connections = asyncio.run(
            run_phase(
                lambda d: [
                    clinician_client(
                        server.port, study_id, criteria, c, d, rate.endpoints, r, think=args.think
                    )
                    for c, r in zip(clinicians, rngs, strict=True)
                ],
                args.duration,
                server.port,
                workers,
            )
        )
        rate.cpu = CpuMeter.delta(before, cpu.snapshot())
        time.sleep(0.3)
        rate.take_access_log(server, log_start, server.access_offset(), workers)
        sampler.stop.set()
        sampler.join()
        stats_after = pg_stats(url)
        load_after = os.getloadavg()

        ok_submits = {aid for c in clinicians for aid in c.submitted}
        check = integrity(url, study_id, ok_submits)
        queries, _ = run_internal_step(
            "queries",
            {
                "study_id": study_id,
                "username": clinicians[0].username,
                "token": clinicians[0].token,
                "criteria": criteria,
            },
            env,
        )
        server_log_tail = server.tail(15)
        server.stop()

        # --- report -------------------------------------------------------------------------
        n_cpu = os.cpu_count() or 0
        think = f"mean think time {args.think:g} s" if args.think else "no think time"
        print(
            f"\nbench_rating: {args.clinicians} simulated clinicians, {args.duration:g} s per phase, {think}"
        )
        print(
            f"machine: {n_cpu} cores (os.cpu_count), load average before {load_before[0]:.2f}, "
            f"after {load_after[0]:.2f}; shared with other jobs, so figures are noisy"
        )
        import psycopg

        with psycopg.connect(url) as conn:
            pg_version = conn.execute("SHOW server_version").fetchone()[0]
        print(
            f"software: Python {sys.version.split()[0]}, Django {version('django')}, DRF "
            f"{version('djangorestframework')}, gunicorn {version('gunicorn')}, PostgreSQL {pg_version}"
        )
        print(
            f"server: gunicorn medhelm_site.wsgi -k gthread -w {args.workers} --threads {args.threads} "
            f"(keep-alive 2 s), DEBUG off, manifest static storage, CONN_MAX_AGE=60, on 127.0.0.1:{server.port}"
        )
        print(
            "client: asyncio HTTP/1.1, "
            + (
                "one keep-alive connection per clinician"
                if Connection.keepalive
                else "a new connection per request"
            )
            + " (see --keepalive); runs in this process, on the same cores"
        )
        print(
            f"per gunicorn worker: requests served baseline {base.per_worker}, rating {rate.per_worker}; "
            f"open client connections halfway baseline {base.connections}, rating {rate.connections}"
        )
        print(
            f"data: {seed['items']:,} items x k={args.k} = {seed['assignments']:,} assignments over "
            f"{len(clinicians)} clinicians, {len(criteria)} criteria; database {db_name(url)}"
        )
        print(
            f"setup: create db {t_create:.1f} s, migrate {t_migrate:.1f} s, collectstatic {t_static:.1f} s, "
            f"seed {t_seed:.1f} s ("
            + ", ".join(f"{k} {v:.2f} s" for k, v in seed["timings"].items())
            + ")\n"
        )

        base_ep = base.endpoints["login"]
        base_p50 = percentile(sorted(base_ep.latencies), 50)
        header = [
            "endpoint",
            "requests",
            "errors",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "req/s",
            "in-worker p50",
            "in-worker p95",
            "p50 / baseline p50",
        ]
        rows = [endpoint_row(base_ep, base.elapsed, None, base.server.get("login"))]
        rows += [
            endpoint_row(ep, rate.elapsed, base_p50, rate.server.get(key))
            for key, ep in rate.endpoints.items()
        ]
        all_rate = Endpoint("rating phase, all requests")
        for ep in rate.endpoints.values():
            all_rate.latencies += ep.latencies
            all_rate.errors += ep.errors
        all_server = [t for k, v in rate.server.items() if k != "other" for t in v]
        rows.append(endpoint_row(all_rate, rate.elapsed, base_p50, all_server))
        print_table(header, rows)
        print(
            "(latencies in ms; p50/p95/p99 as the client saw them, queueing included; in-worker: "
            "from gunicorn's access log, the time a worker thread spent on the request)"
        )
        loops = len(rate.endpoints["submit"].latencies)
        print(
            f"\noverall: baseline {len(base_ep.latencies) / base.elapsed:.1f} req/s over {base.elapsed:.1f} s; "
            f"rating phase {len(all_rate.latencies) / rate.elapsed:.1f} req/s over {rate.elapsed:.1f} s "
            f"({loops / rate.elapsed:.1f} clinician loops/s: redirect + page + submit)"
        )
        for ph in (base, rate):
            budget = n_cpu * ph.elapsed
            print(
                f"CPU during {ph.name} ({budget:.0f} core-s available): "
                + ", ".join(f"{k} {v:.1f} s ({100 * v / budget:.0f}%)" for k, v in ph.cpu.items())
            )
        statuses = {
            ep.label.split(" (")[0]: dict(ep.statuses) for ep in [base_ep, *rate.endpoints.values()]
        }
        print(f"status codes: {statuses}")
        content = sum(ep.content_errors for ep in [base_ep, *rate.endpoints.values()])
        exhausted = sum(c.exhausted for c in clinicians)
        if exhausted:
            print(
                f"note: {exhausted} clinicians finished their whole queue during the run (use --items)"
            )

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
        print(
            f"transactions: {stats_after['commits'] - stats_before['commits']:,} commits, "
            f"{stats_after['rollbacks'] - stats_before['rollbacks']} rollbacks, "
            f"{stats_after['deadlocks'] - stats_before['deadlocks']} deadlocks"
        )
        print(
            "queries per request (one request each, unloaded, Django test client, same database): "
            + ", ".join(
                f"{name} {q['count']} ({1000 * q['wall']:.0f} ms)"
                for name, q in queries.items()
                if name != "assignment_id"
            )
        )
        if args.show_queries:
            for name, q in queries.items():
                if name == "assignment_id":
                    continue
                print(f"\n-- {name} (HTTP {q['status']}): {q['count']} queries")
                for t, sql_text in q["queries"]:
                    short = (
                        sql_text
                        if len(sql_text) <= 260
                        else f"{sql_text[:180]} ... {sql_text[-70:]}"
                    )
                    print(f"  {float(t) * 1000:4.0f} ms  {short}")

        # --- integrity ----------------------------------------------------------------------
        server_errors = sum(ep.server_errors for ep in [base_ep, *rate.endpoints.values()])
        errors = sum(ep.errors for ep in [base_ep, *rate.endpoints.values()])
        good = (
            not check["bad"]
            and check["matches_client"]
            and check["stray_ratings"] == 0
            and check["audit_rows"] == check["submitted"] * check["criteria"]
        )
        print(
            f"\nintegrity: {check['submitted']:,} submitted assignments in the database, "
            f"{len(ok_submits):,} answered 200 to the client (same set: {check['matches_client']}); "
            f"{len(check['bad'])} without exactly one complete rating per each of the {check['criteria']} "
            f"criteria; {check['stray_ratings']} ratings on unsubmitted assignments; "
            f"{check['audit_rows']:,} rating.submit audit rows (expected "
            f"{check['submitted'] * check['criteria']:,}) -> {'OK' if good else 'FAILED'}"
        )
        if check["bad"]:
            print(
                f"  first offenders (assignment, ratings, criteria, complete): {check['bad'][:5]}"
            )
        print(
            f"5xx responses: {server_errors} -> {'OK' if server_errors == 0 else 'FAILED'}; "
            f"all errors (>= 400 or no response): {errors}; page/body content mismatches: {content}"
        )
        if server_errors or errors:
            print(f"gunicorn log (last lines):\n{server_log_tail}")
        ok = good and server_errors == 0 and errors == 0 and content == 0
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
        if args.drop:
            drop_database(url)
        else:
            print(f"database {db_name(url)} kept for inspection (--drop removes it)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
