"""The rows of a report's tables computed side by side, one process per core
(:mod:`agreement.processes`).

A row's cells are independent of every other row's (each draws its resamples from the report's
seed and z-scores within its own items): each row is a task that gets the score table and the
row's settings and gives back the row's cells. Each row works in its own
:func:`agreement.stats.shared.shared_work` scope, as it would alone, so the numbers do not
depend on how many processes there are (tests/agreement/test_row_workers.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from functools import partial
from typing import TypeVar

from agreement.processes import processes
from agreement.stats.shared import shared_work

T = TypeVar("T")


def _alone(task: Callable[[], T]) -> T:
    with shared_work():
        return task()


@contextmanager
def rows_side_by_side(workers: int | None = None) -> Iterator[Callable[[Callable[[], T]], Future]]:
    """Within the block, ``submit(task)`` runs ``task()`` in its own shared-work scope on one
    of :func:`agreement.processes.process_count` ``(workers)`` processes and gives its future; with one worker the
    task runs at once, in the caller. A task and what it returns are pickled: a module-level
    function and its arguments (``functools.partial``), plain data back."""
    with processes(workers) as submit:
        yield lambda task: submit(partial(_alone, task))
