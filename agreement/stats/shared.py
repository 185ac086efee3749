"""Work that the statistics of one report share, inside :func:`shared_work`: a report's cell
hands one table to its point estimate, its bootstrap and its alphas, and the machines of a row
refit the same clinicians on the same resamples, so the same study set or clinicians' fit
would be built several times over (bench/README.md, issue 32). Outside the block nothing is
kept.

A value is remembered for the last few keys of its kind only (a cell's statistics ask one
after another), so a report of thousands of items holds a few tables' work at a time."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

_SCOPE: ContextVar[dict[str, list[tuple[Any, Any]]] | None] = ContextVar(
    "shared_work", default=None
)


@contextmanager
def shared_work() -> Iterator[None]:
    """Within the block, :func:`remembered` values are computed once per key. The tables
    handed to the statistics must not be changed inside it."""
    token = _SCOPE.set({})
    try:
        yield
    finally:
        _SCOPE.reset(token)


def remembered(
    kind: str,
    key: Any,
    same: Callable[[Any, Any], bool],
    compute: Callable[[], T],
    *,
    kept: int,
) -> T:
    """``compute()``, or inside :func:`shared_work` the value of an earlier call of this
    ``kind`` whose key is ``same`` as ``key`` (among the last ``kept``)."""
    scope = _SCOPE.get()
    if scope is None:
        return compute()
    recent = scope.setdefault(kind, [])
    for earlier, value in recent:
        if same(earlier, key):
            return value
    value = compute()
    recent.insert(0, (key, value))
    del recent[kept:]
    return value


#: How many resample chunks a value kept per chunk is kept for (the clinicians' means, their
#: ranks and fit). A report's row evaluates all its statistics chunk by chunk in one pass
#: (agreement.stats.batch), so a chunk's values are read again only within that chunk: a few
#: suffice at any size. (When each machine made its own pass, every chunk of a cell had to be
#: kept for the next machine, 256 of them, about 670 MB per row; at 30,000 items even those
#: were too few, bench/README.md, issue 32.)
CHUNKS_KEPT = 4


_FINGERPRINTS = "fingerprints of arrays"
#: Arrays whose fingerprints are kept (each kept alive meanwhile: chunks of 1 << 16 cells,
#: half a MB each): a row's resample and jackknife chunks (72 at 3,000 items), which the row
#: keeps anyway.
FINGERPRINTS_KEPT = 128


def fingerprint(*arrays: np.ndarray) -> bytes:
    """A key that is equal for arrays of equal shapes, types and bytes: what a remembered
    value computed from large arrays (a chunk of resample weights) is kept under, so that many
    can be kept without keeping the arrays themselves. Inside :func:`shared_work` a single
    array's fingerprint is remembered by identity for the last few arrays (an array handed to
    it must not be changed afterwards, as the shared-work rule already asks of tables)."""
    scope = _SCOPE.get()
    memo = None
    if scope is not None and len(arrays) == 1:
        # the same weights array is asked for by every statistic of a chunk (and, the
        # resamples being drawn once per row, of every cell of the row): hashed once
        memo = scope.setdefault(_FINGERPRINTS, {})
        known = memo.get(id(arrays[0]))
        if known is not None and known[0] is arrays[0]:
            return known[1]
    digest = hashlib.sha256()  # in hardware on most CPUs: 1 GB/s, blake2b a third of it
    for a in arrays:
        a = np.ascontiguousarray(a)
        digest.update(repr((a.shape, a.dtype.str)).encode())
        digest.update(a.data)
    out = digest.digest()
    if memo is not None:
        if len(memo) >= FINGERPRINTS_KEPT:
            memo.clear()
        memo[id(arrays[0])] = (arrays[0], out)  # kept alive, so its id is not reused
    return out
