"""The 1-9 importance scale, its RAND/UCLA bands and their colours, and answer checks.

Bands: 1-3 inappropriate (low), 4-6 uncertain (mid), 7-9 appropriate (high). Every page,
figure and table that colours or counts by band asks `band_of`; `BAND_COLOURS` is the one
palette (the panel's stylesheet repeats it as .band-low, .band-mid, .band-high).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

SCALE_POINTS: tuple[int, ...] = tuple(range(1, 10))
COMPREHENSIVENESS_POINTS: tuple[int, ...] = tuple(range(1, 6))

LOW_BAND: tuple[int, ...] = (1, 2, 3)
MID_BAND: tuple[int, ...] = (4, 5, 6)
HIGH_BAND: tuple[int, ...] = (7, 8, 9)
BANDS: dict[str, tuple[int, ...]] = {"low": LOW_BAND, "mid": MID_BAND, "high": HIGH_BAND}
BAND_COLOURS: dict[str, str] = {"low": "#c0504d", "mid": "#d9a21b", "high": "#2e8b57"}


def band_of(point: int) -> str:
    """The RAND/UCLA band of a scale point: "low" (1-3), "mid" (4-6) or "high" (7-9)."""
    for band, points in BANDS.items():
        if point in points:
            return band
    raise ValueError(f"{point!r} is not a point of the 1-9 scale")


def valid_ratings(answers: Sequence[int | None], scale: Sequence[int], *, what: str) -> list[int]:
    """The non-None answers as ints, after checking each is an integer on the scale."""
    values: list[int] = []
    for position, answer in enumerate(answers):
        if answer is None:
            continue
        # bool is an int subclass, and 7.0 would hide a unit or parsing slip upstream.
        if isinstance(answer, bool) or not isinstance(answer, int | np.integer):
            raise ValueError(f"{what} at position {position} must be an int, got {answer!r}")
        if int(answer) not in scale:
            raise ValueError(
                f"{what} at position {position} must be in {scale[0]}..{scale[-1]}, got {answer!r}"
            )
        values.append(int(answer))
    return values


def percent(count: int, total: int) -> float:
    """count / total on 0-100; written 100 * count / total to keep integer thresholds exact
    (100 * 7 / 10 == 70.0)."""
    return 100.0 * count / total


# Absolute slack for comparisons of floats: P30/P70 come out of interpolation (5.8999999999999995
# for 5.9) and the IPRAS rule is a strict ">", so an exact tie must not flip on rounding noise.
FLOAT_TOLERANCE = 1e-9
