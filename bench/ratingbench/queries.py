"""The SQL of one resume redirect, one rating page and one submit, unloaded, through the
Django test client in a subprocess with the site's settings."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from _support import django_setup


def internal_queries(params: dict[str, Any]) -> dict[str, Any]:
    """Queries issued by one resume redirect, one rating page and one submit, unloaded."""
    django_setup()
    from django.contrib.auth import get_user_model
    from django.test import Client

    user = get_user_model().objects.get(username=params["username"])
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    sid = params["study_id"]
    out: dict[str, Any] = {}
    # Warm this process up first (URL resolvers, templates, DRF): the second request counts.
    warm = client.get(client.get(f"/studies/{sid}/rate/")["Location"])
    assert warm.status_code == 200, warm.status_code
    client.post("/api/assignments/none/submit/", data="{}", content_type="application/json")
    response = capture(out, "resume", lambda: client.get(f"/studies/{sid}/rate/"))
    path = response["Location"]
    handle = path.rstrip("/").rsplit("/", 1)[1]
    capture(out, "rating page", lambda: client.get(path))
    answers = {c["key"]: {"value": c["max"]} for c in params["criteria"]}
    capture(
        out,
        "submit",
        lambda: client.post(
            f"/api/assignments/{handle}/submit/",
            data=json.dumps({"answers": answers, "time_spent_seconds": 30.0}),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Token {params['token']}",
        ),
    )
    out["assignment"] = handle
    return out


def capture(out: dict[str, Any], name: str, fn: Callable[[], Any]) -> Any:
    """Run one request; its status, wall time and queries go to out[name]."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

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
