"""The reference libraries the statistics are checked against, at full precision."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def pingouin_unrounded() -> Iterator[None]:
    """pingouin at full precision: every rounding option off (its public ``options``),
    restored afterwards."""
    import pingouin

    saved = dict(pingouin.options)
    for key in [k for k in pingouin.options if k.startswith("round.")]:
        del pingouin.options[key]
    pingouin.options["round"] = None
    try:
        yield
    finally:
        pingouin.options.clear()
        pingouin.options.update(saved)
