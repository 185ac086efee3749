"""Cells written as steps, so that the cells of a row can share one pass over the resamples.

A cell's computation is a generator: it checks its data and builds its statistics, then
yields the bootstraps it needs (a tuple of :class:`agreement.stats.batch.Bootstraps`) and
receives their results by key (or, where the data allow none, the ValueError thrown in at the
yield, as a direct call would have raised it there), and returns its fields. Written so, one
cell runs alone (:func:`run_cells` of one) or beside the other cells of its row, every
request of the row answered together (:func:`agreement.stats.batch.bootstrap_together`): the
clinicians' work per resample chunk is then done once for all the row's machines, not once
per machine (bench/README.md, issue 32). A cell's numbers do not depend on which cells run
beside it."""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from functools import partial
from typing import TypeVar

from agreement.stats.batch import Bootstraps, bootstrap_together
from agreement.stats.bootstrap import BootstrapResult

T = TypeVar("T")

#: A cell's steps: yields what it asks to be bootstrapped, is sent the results, returns a T.
CellSteps = Generator[tuple[Bootstraps, ...], dict[str, BootstrapResult], T]


def run_cells(cells: Sequence[CellSteps[T]]) -> list[T]:
    """What each cell returns, in order, every round of requests answered together."""
    done: dict[int, T] = {}
    waiting: dict[int, tuple[Bootstraps, ...]] = {}

    def advance(i: int, move: Callable[[], tuple[Bootstraps, ...]]) -> None:
        try:
            waiting[i] = move()
        except StopIteration as finished:
            done[i] = finished.value

    for i, steps in enumerate(cells):
        advance(i, steps.__next__)
    while waiting:
        asked = list(waiting.items())
        waiting.clear()
        answers = iter(bootstrap_together([part for _, parts in asked for part in parts]))
        for i, parts in asked:
            got = [next(answers) for _ in parts]
            error = next((a for a in got if isinstance(a, ValueError)), None)
            if error is not None:
                advance(i, partial(cells[i].throw, error))
            else:
                results = {k: v for a in got for k, v in a.items()}  # type: ignore[union-attr]
                advance(i, partial(cells[i].send, results))
    return [done[i] for i in range(len(cells))]
