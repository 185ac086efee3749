"""How the report page, the figures and the PDF write a number."""

from __future__ import annotations

import math
from typing import Any

DASH = "\u2013"  # shown where there is no number


def finite(x: Any) -> bool:
    """A real number that can be drawn (not None, NaN or infinite)."""
    return x is not None and isinstance(x, int | float) and math.isfinite(x)


def fmt(x: Any, digits: int = 3) -> str:
    """`x` with `digits` decimals; whole numbers as they are; a dash where there is none."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return DASH
    if isinstance(x, int) and abs(x) < 10**15:
        return str(x)
    if abs(x) >= 10**6:  # e.g. an ICC of a near-degenerate clinician pair
        return f"{float(x):.{digits}g}"
    text = f"{x:.{digits}f}"
    # a small negative number rounds to "-0.000", which reads as a sign that means something
    if text.startswith("-") and float(text) == 0:
        text = text[1:]
    return text


def fmt_ci(lo: Any, hi: Any, digits: int = 3) -> str:
    """An interval as "(lo, hi)", or a dash where either bound is missing."""
    if lo is None or hi is None:
        return DASH
    return f"({fmt(lo, digits)}, {fmt(hi, digits)})"
