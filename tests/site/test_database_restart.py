"""PostgreSQL restarted while clinicians rate, against gunicorn with production settings on a
private cluster: requests during the outage get a 503 that says the database is unavailable
(JSON with Retry-After for the API, a short page for pages), never a 500; clients retrying as
the rating page does (any 5xx, again later) all succeed; afterwards every accepted rating is in
the database exactly once, and nothing the clients were not told about."""

from __future__ import annotations

import http.client
import json
import random
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import pytest

from tests.support.outage_site import set_up_site
from tests.support.private_postgres import missing_binaries, private_cluster

CLINICIANS, ITEMS, PER_CLIENT = 4, 48, 10
OUTAGE_SECONDS = 3.0

pytestmark = [
    pytest.mark.slow,
    pytest.mark.postgres,
    pytest.mark.skipif(missing_binaries() is not None, reason=str(missing_binaries())),
]


@dataclass
class Log:
    """Every request's (time, kind, status); status 0 when the connection failed."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    records: list[tuple[float, str, int]] = field(default_factory=list)
    bodies_503: list[tuple[str, str, str]] = field(default_factory=list)  # kind, type, body
    retry_after: set[str] = field(default_factory=set)
    retries: int = 0

    def add(self, kind: str, status: int) -> None:
        with self.lock:
            self.records.append((time.monotonic(), kind, status))


def call(port: int, method: str, path: str, headers: dict, body: bytes | None, kind: str, log: Log):
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
        conn.close()
    except OSError:
        log.add(kind, 0)
        return None
    log.add(kind, response.status)
    if response.status == 503:
        with log.lock:
            log.bodies_503.append((kind, response.getheader("Content-Type", ""), data.decode()))
            log.retry_after.add(response.getheader("Retry-After", ""))
    return response.status, response.getheader("Location", ""), data


def retried(log: Log, *request):
    """Send `request` (call's arguments but the log) until it is answered other than with a
    5xx or a dropped connection, as rate.js does
    (it waits 5 s; here 0.2 s, so that the test stays short)."""
    for _ in range(200):
        result = call(*request, log)
        if result is not None and result[0] < 500:
            return result
        with log.lock:
            log.retries += 1
        time.sleep(0.2)
    raise AssertionError("a request kept failing after 200 tries")


def clinician(port: int, seed: dict, who: dict, log: Log, accepted: set, done: list) -> None:
    rng = random.Random(who["user_id"])
    study = seed["study_id"]
    cookie = {"Cookie": f"sessionid={who['session']}"}
    auth = {"Authorization": f"Token {who['token']}", "Content-Type": "application/json"}
    for _ in range(PER_CLIENT):
        status, location, _ = retried(
            log, port, "GET", f"/studies/{study}/rate/", cookie, None, "page"
        )
        match = re.search(rf"/studies/{study}/rate/([-\w]+)/$", location)
        assert status == 302 and match, (status, location)
        handle = match.group(1)
        answers = {c["key"]: {"value": rng.randint(c["min"], c["max"])} for c in seed["criteria"]}
        body = json.dumps({"answers": answers, "time_spent_seconds": 30}).encode()
        path = f"/api/assignments/{handle}/submit/"
        status, _, data = retried(log, port, "POST", path, auth, body, "submit")
        assert status == 200, data[:300]
        with log.lock:
            accepted.add(handle)
    done.append(who["username"])


def wait_until_accepted(n: int, accepted: set, threads: list[threading.Thread]) -> None:
    while len(accepted) < n and any(t.is_alive() for t in threads):
        time.sleep(0.05)


def outage_figures(name: str, down: float, up: float, log: Log) -> dict:
    """Requests sent during an outage by status, and when a submit was next accepted."""
    first_ok = min(
        (at for at, kind, s in log.records if at > up and kind == "submit" and s == 200),
        default=float("nan"),
    )
    during = Counter(s for at, _k, s in log.records if down <= at <= up)
    print(
        f"\nFAULT database {name}: down {up - down:.1f} s; requests meanwhile by status "
        f"{dict(sorted(during.items()))} (0 = connection refused); first accepted submit "
        f"{first_ok - up:.2f} s after the database was back"
    )
    return during


def test_ratings_survive_a_database_restart(tmp_path):
    with private_cluster() as cluster:
        url, env, seed = set_up_site(cluster, tmp_path, clinicians=CLINICIANS, items=ITEMS, k=1)
        from ratingbench.gunicorn import Gunicorn
        from ratingbench.integrity import integrity

        server = Gunicorn(env, 2, 4, tmp_path / "gunicorn.log")
        try:
            server.wait_ready()
            log, accepted, done = Log(), set(), []
            threads = [
                threading.Thread(
                    target=clinician, args=(server.port, seed, who, log, accepted, done)
                )
                for who in seed["clinicians"]
            ]
            for t in threads:
                t.start()
            # First `pg_ctl restart -m fast` (down for about a second), then a stop, a 3 s
            # wait and a start, so that clients surely meet the outage.
            wait_until_accepted(8, accepted, threads)
            down = time.monotonic()
            cluster.restart()
            outages = [("pg_ctl restart -m fast", down, time.monotonic())]
            wait_until_accepted(20, accepted, threads)
            down = time.monotonic()
            cluster.stop()
            time.sleep(OUTAGE_SECONDS)
            cluster.start()
            outages.append((f"stopped {OUTAGE_SECONDS:.0f} s", down, time.monotonic()))
            for t in threads:
                t.join(timeout=120)
            stored = integrity(url, seed["study_id"], accepted)
        finally:
            server.stop()

    _fast, slow = (outage_figures(name, down, up, log) for name, down, up in outages)
    kinds = Counter((k, c.split(";")[0]) for k, c, _ in log.bodies_503)
    print(
        f"FAULT database totals: requests by status {dict(Counter(s for *_x, s in log.records))}; "
        f"503s by request and type {dict(kinds)}; retries {log.retries}; submits accepted "
        f"{len(accepted)}, assignments stored submitted {stored['submitted']} (same set: "
        f"{stored['matches_client']}), audit rows {stored['audit_rows']} for "
        f"{stored['criteria']} criteria each, incomplete {len(stored['bad'])}, stray "
        f"{stored['stray_ratings']}"
    )
    assert sorted(done) == sorted(c["username"] for c in seed["clinicians"])
    # The clear error: 503s during the outage, never a 500 (a traceback page) at any time.
    assert slow[503] > 0, slow
    assert all(s != 500 for _at, _k, s in log.records)
    assert log.retry_after == {"5"}
    assert ("submit", "application/json") in kinds, kinds
    for _kind, _ctype, body in log.bodies_503:
        assert "database is unavailable" in body
    # Nothing lost, nothing twice: the stored set is the accepted one, each complete.
    assert len(accepted) == CLINICIANS * PER_CLIENT
    assert stored["matches_client"], stored
    assert stored["bad"] == [] and stored["stray_ratings"] == 0
    assert stored["submitted"] == len(accepted)
    assert stored["audit_rows"] == stored["submitted"] * stored["criteria"]  # one per rating
