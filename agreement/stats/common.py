"""Small helpers shared by the statistics modules (no Django, numpy/pandas only)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from importlib.metadata import PackageNotFoundError, version

import numpy as np
import pandas as pd

#: Raters whose kind is one of these are "machines" in the MedHELM sense.
MACHINE_KINDS: frozenset[str] = frozenset({"judge", "jury", "metric"})
RATER_KINDS: frozenset[str] = frozenset({"clinician"}) | MACHINE_KINDS
SCORE_COLUMNS: tuple[str, ...] = ("item", "criterion", "rater", "rater_kind", "value")


def require_columns(table: pd.DataFrame, columns: Iterable[str], *, what: str = "table") -> None:
    """Raise a ValueError naming every column of ``columns`` missing from ``table``."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"{what} must be a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(f"{what} is missing column(s) {missing}; it has {list(table.columns)}")


def numeric_values(values: pd.Series, *, what: str) -> np.ndarray:
    """Return ``values`` as float64, raising a ValueError that names non-numeric input."""
    try:
        out = pd.to_numeric(values, errors="raise").to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"column {what!r} must be numeric: {exc}") from exc
    return out


def as_generator(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A numpy Generator from a seed, an existing Generator (used as is) or None (fresh)."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def recorded_seed(seed: int | np.integer | np.random.Generator | None) -> int | None:
    """The seed as a plain int for a report (NumPy integers included); None for a Generator
    or no seed, whose stream cannot be written down."""
    if isinstance(seed, bool):
        raise TypeError("seed must be an integer, a numpy Generator or None, not a bool")
    if isinstance(seed, int | np.integer):
        return int(seed)
    if seed is None or isinstance(seed, np.random.Generator):
        return None
    raise TypeError(f"seed must be an integer, a numpy Generator or None, got {type(seed)}")


def _plain(x: object) -> object:
    """numpy scalars (also inside tuples) as Python scalars, for readable messages."""
    if isinstance(x, tuple):
        return tuple(_plain(v) for v in x)
    if isinstance(x, np.generic):
        return x.item()
    return x


def examples(labels: Sequence[object], limit: int = 5) -> str:
    """Up to ``limit`` labels for an error message, with a count of the rest."""
    shown = ", ".join(repr(_plain(x)) for x in list(labels)[:limit])
    rest = len(labels) - limit
    return shown + (f" and {rest} more" if rest > 0 else "")


def package_versions() -> dict[str, str]:
    """Versions of the numerical packages behind the statistics, for reports."""
    out: dict[str, str] = {}
    for name in ("numpy", "scipy", "pandas", "krippendorff"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:  # pragma: no cover - all are dependencies
            out[name] = "not installed"
    return out
