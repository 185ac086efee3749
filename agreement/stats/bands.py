"""Koo & Li (2016) interpretation bands for ICC values.

Source: Koo, T. K. & Li, M. Y. (2016). A guideline of selecting and reporting intraclass
correlation coefficients for reliability research. J. Chiropr. Med. 15(2), 155-163:
"values less than 0.5, between 0.5 and 0.75, between 0.75 and 0.9, and greater than 0.90 are
indicative of poor, moderate, good, and excellent reliability, respectively", and the band
should be judged on the 95% confidence interval, not on the point estimate alone.

Cut points here: < 0.5 poor, < 0.75 moderate, < 0.9 good, otherwise excellent (a value equal
to a cut point goes to the higher band).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

BANDS: tuple[str, ...] = ("poor", "moderate", "good", "excellent")
CUTS: tuple[float, ...] = (0.5, 0.75, 0.9)
UNDEFINED = "undefined"


def koo_li_band(value: float | None) -> str:
    """Koo & Li band of one ICC value; ``"undefined"`` for NaN or None."""
    if value is None:
        return UNDEFINED
    v = float(value)
    if math.isnan(v):
        return UNDEFINED
    for cut, band in zip(CUTS, BANDS, strict=False):
        if v < cut:
            return band
    return BANDS[-1]


def koo_li_bands(values: npt.ArrayLike) -> np.ndarray:
    """Vectorised :func:`koo_li_band`: an object array of labels, same shape as ``values``."""
    v = np.asarray(values, dtype=np.float64)
    labels = np.array(BANDS, dtype=object)[np.searchsorted(CUTS, np.nan_to_num(v), side="right")]
    labels = np.where(np.isnan(v), UNDEFINED, labels)
    return labels.astype(object)


def koo_li_interval_band(ci_low: float, ci_high: float) -> str:
    """Band(s) spanned by a confidence interval, as Koo & Li recommend reading it:
    e.g. ``"moderate"`` or ``"poor to good"``."""
    lo, hi = koo_li_band(ci_low), koo_li_band(ci_high)
    if UNDEFINED in (lo, hi):
        return UNDEFINED
    if BANDS.index(lo) > BANDS.index(hi):
        raise ValueError(f"ci_low {ci_low} is above ci_high {ci_high}")
    return lo if lo == hi else f"{lo} to {hi}"
