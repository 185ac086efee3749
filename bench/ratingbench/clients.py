"""The simulated clinicians and the baseline clients, the figures they collect per endpoint,
and a phase: every client running until its deadline."""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ratingbench.gunicorn import Gunicorn, connections_per_worker
from ratingbench.load import Connection, HttpError, Response


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
    if re.fullmatch(r"/studies/\d+/rate/[-\w]+/", path):
        return "page"
    if method == "POST" and re.fullmatch(r"/api/assignments/[-\w]+/submit/", path):
        return "submit"
    return "other"


async def timed(
    ep: Endpoint, conn: Connection, method: str, path: str, **kw: Any
) -> Response | None:
    """One request, its latency and status counted on `ep`; None if it got no response."""
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
    submitted: list[str] = field(default_factory=list)  # assignment handles


@dataclass
class Visit:
    """What one simulated clinician needs for its loop."""

    conn: Connection
    study_id: int
    criteria: list[dict[str, Any]]
    clinician: Clinician
    eps: dict[str, Endpoint]
    rng: random.Random


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
    """Loop until the deadline (or 5 failures in a row): the resume redirect, the rating page
    it points to, a submit with token auth; without `submit`, one page and stop (warm-up)."""
    conn = Connection("127.0.0.1", port)
    conn.cookies["sessionid"] = clinician.session
    visit = Visit(conn, study_id, criteria, clinician, eps, rng)
    failures = 0
    try:
        while time.perf_counter() < deadline and failures < 5:
            handle = await open_next_page(visit)
            if handle is None:
                failures += 1
                continue
            if not handle or not submit:
                return  # the queue is done (or a warm-up visit)
            if not await submit_ratings(visit, handle):
                failures += 1
                continue
            failures = 0
            if think > 0:  # reading and rating the next item, exponentially distributed
                pause = min(rng.expovariate(1 / think), deadline - time.perf_counter())
                if pause > 0:
                    await asyncio.sleep(pause)
    finally:
        conn.close()


async def open_next_page(visit: Visit) -> str | None:
    """Follow the resume redirect to a rating page: its assignment handle, "" when the
    clinician has rated everything, None on a failure."""
    eps, conn = visit.eps, visit.conn
    response = await timed(eps["resume"], conn, "GET", f"/studies/{visit.study_id}/rate/")
    if response is None or response.status != 302:
        return None
    path = urlsplit(response.header("location")).path
    match = re.fullmatch(rf"/studies/{visit.study_id}/rate/([-\w]+)/", path)
    if match is None:  # the queue page: this clinician has rated everything
        visit.clinician.exhausted = True
        return ""
    handle = match.group(1)
    page = await timed(eps["page"], conn, "GET", path)
    if page is None or page.status != 200:
        return None
    if f'data-assignment="{handle}"'.encode() not in page.body:
        eps["page"].content_errors += 1
    return handle


async def submit_ratings(visit: Visit, handle: str) -> bool:
    """Submit random valid values for the assignment `handle`; True when answered 200."""
    rng, ep = visit.rng, visit.eps["submit"]
    answers = {c["key"]: {"value": rng.randint(c["min"], c["max"])} for c in visit.criteria}
    body = json.dumps(
        {"answers": answers, "time_spent_seconds": round(rng.uniform(20, 240), 1)}
    ).encode()
    auth = {"Authorization": f"Token {visit.clinician.token}", "Content-Type": "application/json"}
    path = f"/api/assignments/{handle}/submit/"
    result = await timed(ep, visit.conn, "POST", path, headers=auth, body=body)
    if result is None or result.status != 200:
        return False
    try:
        if json.loads(result.body).get("status") != "submitted":
            ep.content_errors += 1
    except ValueError:
        ep.content_errors += 1
    visit.clinician.submitted.append(handle)
    return True


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
