"""Threshold comparisons with floating-point slack, shared by the consensus and stopping rules.

Percentages, medians and IQRs are computed in floats (an IQR of 1.0000000000000002 must
count as "<= 1"), so every comparison allows FLOAT_TOLERANCE.
"""

from __future__ import annotations

FLOAT_TOLERANCE = 1e-9


def at_least(value: float, threshold: float) -> bool:
    return value >= threshold - FLOAT_TOLERANCE


def at_most(value: float, threshold: float) -> bool:
    return value <= threshold + FLOAT_TOLERANCE


def below(value: float, threshold: float) -> bool:
    return value < threshold - FLOAT_TOLERANCE


def number_text(value: float) -> str:
    """A threshold as a report prints it: 70, 2.5 (no trailing .0)."""
    return f"{value:g}"
