"""Work that the statistics of one report share, inside :func:`shared_work`: a report's cell
hands one table to its point estimate, its bootstrap and its alphas, and its rows often share
one design (who rated which item), so the same study set or design decomposition would be
built several times over (bench/README.md, issue 32). Outside the block nothing is kept.

A value is remembered for the last few keys of its kind only (a cell's statistics ask one
after another), so a report of thousands of items holds a few tables' work at a time."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

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
