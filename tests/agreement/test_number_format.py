"""How the report prints a number: fixed decimals, no negative zero, a dash for none."""

import math

import numpy as np
import pytest

from agreement.plots.numbers import DASH, fmt, fmt_ci


@pytest.mark.parametrize(
    "value, shown",
    [
        (-0.0000001, "0.000"),
        (-0.0, "0.000"),
        (np.float64(-0.0004), "0.000"),
        (-0.0005001, "-0.001"),
        (0.4994, "0.499"),
        (-20.6981, "-20.698"),
        (3, "3"),
        (None, DASH),
        (math.nan, DASH),
    ],
)
def test_a_value_is_printed_with_three_decimals_and_never_as_negative_zero(value, shown):
    assert fmt(value) == shown


def test_an_interval_that_starts_just_below_zero_reads_from_zero():
    assert fmt_ci(-0.0001, 1.0) == "(0.000, 1.000)"
    assert fmt_ci(None, 1.0) == DASH
