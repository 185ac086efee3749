"""How a median, a quartile or an IQR is written, everywhere: the panel's feedback, the
coordinator's round page, error messages, the report (HTML, Markdown, PDF) and its charts.

The rule (ROUNDING_RULE, printed with the statistics): at most two decimals, rounded half
away from zero on the decimal value, trailing zeros dropped. Medians and quartiles of 1-9
ratings are multiples of 0.25 under the usual quantile methods, so two decimals write them
exactly (8.25 stays 8.25, 4.50 is written 4.5, 6.00 is written 6). Pure; no Django import.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

DASH = "\u2013"
DECIMALS = 2
ROUNDING_RULE = (
    "Medians, quartiles and IQRs are written with at most two decimals (rounded half away "
    "from zero), trailing zeros dropped: 8.25, 4.5, 6."
)
_QUANTUM = Decimal(1).scaleb(-DECIMALS)


def stat_number(value: float | int | None) -> str:
    """A median, quartile or IQR as text (a dash when there is none)."""
    if value is None:
        return DASH
    # str() first: the float's shortest repr (8.25, 7.335), not its binary expansion.
    rounded = Decimal(str(value)).quantize(_QUANTUM, rounding=ROUND_HALF_UP)
    text = f"{rounded:f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def quartiles_text(q1: float | None, q3: float | None) -> str:
    """Q1-Q3, e.g. "4.5-6"."""
    if q1 is None or q3 is None:
        return DASH
    return f"{stat_number(q1)}{DASH}{stat_number(q3)}"


def iqr_text(q1: float | None, q3: float | None) -> str:
    """Q1-Q3 and the IQR (Q3 - Q1) in brackets, e.g. "4.5-6 (1.5)" (with an en dash)."""
    if q1 is None or q3 is None:
        return DASH
    width = Decimal(str(q3)) - Decimal(str(q1))
    return f"{quartiles_text(q1, q3)} ({stat_number(float(width))})"
