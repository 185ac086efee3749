"""Rating page and submit endpoint under concurrent simulated clinicians, on a production server.

    .venv/bin/python bench/bench_rating.py [--clinicians 50] [--duration 20] [--quick] [--drop]
        [--database-url postgres://postgres@127.0.0.1:5432/medhelm_bench]
        [--workers 4] [--threads 4] [--keepalive] [--think 0] [--items 2000] [--show-queries]
        [--baseline-duration S] [--broker redis://127.0.0.1:6379/7]

gunicorn (gthread) with production settings on a seeded PostgreSQL database; simulated
clinicians loop over the resume redirect, the rating page and the submit endpoint. Prints
latency per endpoint as a ratio to a trivial page under the same load, then checks in the
database that every submit left exactly one rating per criterion. Procedure and options:
bench/README.md; the parts are in bench/ratingbench/.
"""

from __future__ import annotations

import argparse
import sys

from _support import sigterm_as_exit
from ratingbench.config import DEFAULT_URL


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clinicians", type=int, default=50)
    p.add_argument("--duration", type=float, default=20.0, help="seconds per phase")
    p.add_argument("--items", type=int, default=2000)
    p.add_argument("--k", type=int, default=2, help="ratings per item")
    p.add_argument("--database-url", default=DEFAULT_URL)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument(
        "--think",
        type=float,
        default=0.0,
        help="mean think time in seconds after each submit (default 0: no pause, a stress test)",
    )
    p.add_argument(
        "--baseline-duration",
        type=float,
        default=None,
        help="seconds of the baseline phase (default: --duration)",
    )
    p.add_argument(
        "--broker",
        default=None,
        help="the production layout: this Celery broker (redis://... or amqp://...) for the "
        "site, with the two Celery workers and beat of docs/deploy/run-production.sh running "
        "(the agreement watch's refreshes then run during the rating phase); its database is "
        "flushed first",
    )
    p.add_argument("--quick", action="store_true", help="smoke run: 10 clinicians, 5 s")
    p.add_argument("--drop", action="store_true", help="drop the bench database at the end")
    p.add_argument(
        "--keepalive",
        action="store_true",
        help="one persistent connection per clinician (default: a new connection per request, "
        "as from a proxy that does not keep upstream connections alive)",
    )
    p.add_argument("--show-queries", action="store_true", help="print the SQL of each request")
    p.add_argument("--internal", choices=["seed", "queries"], help=argparse.SUPPRESS)
    return p


def main() -> int:
    args = parser().parse_args()
    if args.internal:
        from ratingbench.internal import run_internal

        run_internal(args.internal)
        return 0
    if args.quick:
        args.clinicians, args.duration = 10, 5.0
    from ratingbench.runner import bench

    try:
        with sigterm_as_exit():
            return bench(args)
    except KeyboardInterrupt:
        print("interrupted: gunicorn stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
