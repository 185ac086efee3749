"""Jury runs through real Celery workers against a local fake provider: throughput and accounting.

    .venv/bin/python bench/bench_jury.py [--items 2000] [--quick] [--workers 2] [--threads 6]
        [--latency 0.1] [--concurrency 16] [--failure-rate 0.05] [--retry-after 0.2]
        [--database-url postgres://postgres@127.0.0.1:5432/medhelm_bench_jury]
        [--redis-url redis://127.0.0.1:6379/12] [--instrument] [--cprofile] [--drop]

N items x 3 judges against a local server answering in `--latency` seconds, each judge
allowing `--concurrency` requests in flight; target: wall / ideal <= 1.25, where ideal =
calls x latency / total concurrency. Then 5% failures with the accounting checked call by
call, then a re-run served from the cache. Procedure and options: bench/README.md. The parts
are in bench/jurybench/; this script is also the command of its fake-provider process and of
its instrumented workers (`--internal server|worker`).
"""

from __future__ import annotations

import argparse
import json
import sys

from _support import project_on_path, sigterm_as_exit
from jurybench.config import DEFAULT_DB_URL, DEFAULT_REDIS_URL


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--items", type=int, default=2000)
    p.add_argument("--quick", action="store_true", help="smoke run: 200 items")
    # Two processes (one per core of the reference machine), each with one event loop for the
    # provider requests and six task threads, i.e. six chunks at once: a chunk's task lasts
    # until its slowest call (a retry after a 429 or 500) ends, and meanwhile the others keep
    # enough calls waiting for every slot.
    p.add_argument("--workers", type=int, default=2, help="Celery worker processes")
    p.add_argument("--threads", type=int, default=6, help="threads per worker process")
    p.add_argument("--latency", type=float, default=0.1, help="provider latency, seconds")
    p.add_argument("--concurrency", type=int, default=16, help="max_concurrency per judge")
    p.add_argument("--failure-rate", type=float, default=0.05, help="phase 2")
    p.add_argument(
        "--retry-after",
        type=float,
        default=0.2,
        help="Retry-After of the phase-2 429s, seconds (default 0.2: the check there is "
        "accounting; a real provider's 1-60 s would dominate the wall time)",
    )
    p.add_argument("--database-url", default=DEFAULT_DB_URL)
    p.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    p.add_argument(
        "--instrument", action="store_true", help="phase timers and SQL counts in the worker"
    )
    p.add_argument(
        "--cprofile", action="store_true", help="cProfile in the worker (implies --instrument)"
    )
    p.add_argument("--drop", action="store_true", help="drop the bench database at the end")
    p.add_argument("--internal", choices=["server", "worker"], help=argparse.SUPPRESS)
    return p


def main() -> int:
    cli = parser()
    args, rest = cli.parse_known_args()
    if args.internal == "server":
        project_on_path()
        from jurybench.provider_process import serve_fake_provider

        serve_fake_provider(json.loads(rest[0]))
        return 0
    if args.internal == "worker":
        from jurybench.instrumented_worker import run_instrumented_worker

        run_instrumented_worker(rest)
        return 0
    if rest:
        cli.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.quick:
        args.items = 200
    from jurybench.runner import bench

    try:
        with sigterm_as_exit():
            return bench(args)
    except KeyboardInterrupt:
        print("interrupted: workers and the fake provider stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
