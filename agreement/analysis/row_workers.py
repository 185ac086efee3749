"""The rows of a report's tables computed side by side, one thread per core.

A row's cells are independent of every other row's (each draws its resamples from the report's
seed and z-scores within its own items), and nearly all of their time is spent in numpy's
sorts, gathers and array arithmetic, which run without the GIL: threads give the report the
machine's cores without copying the score table to other processes (and a Celery worker's
processes may not start processes of their own). Each row works in its own
:func:`agreement.stats.shared.shared_work` scope, as it would alone, so the numbers do not
depend on how many threads there are (tests/agreement/test_row_workers.py)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

from threadpoolctl import ThreadpoolController

from agreement.stats.shared import shared_work

T = TypeVar("T")

#: At most this many rows at once (a row holds its resample chunks' shared work, a few
#: hundred MB at 3,000 items; bench/README.md, issue 32).
MAX_ROW_WORKERS = 4

_BLAS = ThreadpoolController()


def row_workers(asked: int | None = None) -> int:
    """``asked`` where it is a positive number (1: one row after another), else the cores this
    process may run on, at most :data:`MAX_ROW_WORKERS` (the site passes its setting
    AGREEMENT_REPORT_THREADS, 0 when unset)."""
    if asked is not None and asked > 0:
        return asked
    return max(1, min(MAX_ROW_WORKERS, len(os.sched_getaffinity(0))))


def _alone(task: Callable[[], T]) -> T:
    with shared_work():
        return task()


@contextmanager
def rows_side_by_side(workers: int | None = None) -> Iterator[Callable[[Callable[[], T]], Future]]:
    """Within the block, ``submit(task)`` runs ``task()`` in its own shared-work scope on one
    of :func:`row_workers` ``(workers)`` threads and gives its future; with one worker
    the task runs at once, in the caller's thread. BLAS is held to one thread meanwhile (the
    rows are the parallelism; a BLAS thread per row besides would oversubscribe the cores)."""
    n = row_workers(workers)
    if n <= 1:

        def now(task: Callable[[], T]) -> Future:
            done: Future = Future()
            done.set_result(_alone(task))
            return done

        yield now
        return
    with _BLAS.limit(limits=1, user_api="blas"), ThreadPoolExecutor(n) as pool:
        yield lambda task: pool.submit(_alone, task)
