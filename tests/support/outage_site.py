"""The site on a private PostgreSQL cluster, for the database-outage tests: production
settings over plain HTTP, migrated, static files collected and a rating study seeded by the
rating bench's own seeding step (bench/ratingbench)."""

from __future__ import annotations

import secrets
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def set_up_site(cluster, data_dir: Path, *, clinicians: int, items: int, k: int):
    """(database URL, the site's environment, the seed: study, criteria, clinicians with
    their session keys and API tokens)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    from _support import PYTHON, app_env, run_step
    from ratingbench.internal import run_internal_step

    cluster.create_database("medhelm")
    url = cluster.url("medhelm")
    env = app_env(
        url,
        data_dir,
        SECRET_KEY=secrets.token_urlsafe(50),
        SECURE_SSL_REDIRECT="0",
        SESSION_COOKIE_SECURE="0",
        CSRF_COOKIE_SECURE="0",
    )
    run_step([PYTHON, "manage.py", "migrate", "--noinput"], env, "migrate")
    run_step([PYTHON, "manage.py", "collectstatic", "--noinput"], env, "collectstatic")
    seed, _ = run_internal_step("seed", {"clinicians": clinicians, "items": items, "k": k}, env)
    return url, env, seed
