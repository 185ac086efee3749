"""The rating bench's Django subprocesses (`bench_rating.py --internal seed|queries`): their
parameters go in through the environment, their result comes out as one JSON line."""

from __future__ import annotations

import json
import os
from typing import Any

from _support import PYTHON, run_step

from ratingbench.config import ENTRY, JSON_MARK


def run_internal(mode: str) -> None:
    """In the subprocess: do `mode` with BENCH_PARAMS, print the result after JSON_MARK."""
    from ratingbench.queries import internal_queries
    from ratingbench.seeding import internal_seed

    params = json.loads(os.environ["BENCH_PARAMS"])
    result = {"seed": internal_seed, "queries": internal_queries}[mode](params)
    print(JSON_MARK + json.dumps(result))


def run_internal_step(mode: str, params: dict[str, Any], env: dict[str, str]) -> tuple[Any, float]:
    """In the bench: run the `mode` subprocess to its end; (its result, seconds)."""
    out, elapsed = run_step(
        [PYTHON, ENTRY, "--internal", mode],
        {**env, "BENCH_PARAMS": json.dumps(params)},
        f"{mode} subprocess",
    )
    line = next(x for x in reversed(out.splitlines()) if x.startswith(JSON_MARK))
    return json.loads(line[len(JSON_MARK) :]), elapsed
