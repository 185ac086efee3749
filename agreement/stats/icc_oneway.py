"""One-way random-effects ICC(1) with unequal numbers of ratings per item (Snedecor &
Cochran; Donner 1986, Int. Stat. Rev. 54(1), 67-82; Shrout & Fleiss 1979 when balanced):

MSB = sum_i n_i (ybar_i - ybar)^2 / (n - 1),  MSW = sum_ij (y_ij - ybar_i)^2 / (N - n),
k0 = (N - sum_i n_i^2 / N) / (n - 1),
ICC(1) = (MSB - MSW) / (MSB + (k0 - 1) MSW),  ICC(1,k0) = (MSB - MSW) / MSB.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from .long_codes import Codes, codes_from_long


@dataclass(frozen=True)
class OneWayIcc:
    """One-way random-effects ICC for unequal numbers of ratings per item."""

    icc: float  # ICC(1) for a single rating
    icc_k0: float  # ICC(1,k0): reliability of the mean of k0 ratings, (MSB - MSW) / MSB
    k0: float
    n_items: int
    n_ratings: int
    ms_between: float
    ms_within: float
    f: float
    df1: float
    df2: float
    p: float
    ci_low: float  # approximate: the balanced-case F interval with k0 in place of k
    ci_high: float
    ci_k0_low: float
    ci_k0_high: float
    confidence: float


@dataclass(frozen=True)
class _OneWayAnova:
    n_items: int
    n_ratings: int
    ms_between: float
    ms_within: float
    df1: int
    df2: int
    k0: float


def _one_way_anova(c: Codes) -> _OneWayAnova:
    y = c.values
    n_items = len(c.items)
    big_n = y.size
    if n_items < 2:
        raise ValueError("need at least 2 items")
    if big_n <= n_items:
        raise ValueError("need at least one item with 2 or more ratings")
    n_i = np.bincount(c.item_codes, minlength=n_items).astype(np.float64)
    means = np.bincount(c.item_codes, weights=y, minlength=n_items) / n_i
    grand = y.mean()
    ssb = float(np.sum(n_i * (means - grand) ** 2))
    ssw = float(np.sum((y - means[c.item_codes]) ** 2))
    df1 = n_items - 1
    df2 = big_n - n_items
    k0 = (big_n - np.sum(n_i**2) / big_n) / (n_items - 1)
    return _OneWayAnova(n_items, big_n, ssb / df1, ssw / df2, df1, df2, k0)


def icc_oneway_unbalanced(
    table: pd.DataFrame,
    *,
    item: str = "item",
    rater: str = "rater",
    value: str = "value",
    confidence: float = 0.95,
) -> OneWayIcc:
    """One-way ICC(1) with the k0 correction for unequal group sizes (see module docstring).

    Items with a single rating are kept: they contribute to MSB and to N but not to MSW.
    The F test (F = MSB/MSW, df n-1 and N-n) is exact under normality; the interval is the
    usual approximation that replaces k by k0 in the balanced-case F limits (Donner 1986,
    sec. 3), adequate when the n_i do not vary much. Rater labels are only used to reject
    duplicate (item, rater) rows. With equal n_i = k this equals ICC(1,1) / ICC(1,k) of the
    complete matrix.
    """
    m = _one_way_anova(codes_from_long(table, item, rater, value))
    # numpy scalars: a zero MSW (every item's ratings agree) gives F = inf and ICC = 1, as
    # :func:`.icc.icc` does, instead of Python's ZeroDivisionError; all ratings equal: NaN.
    msb, msw = np.float64(m.ms_between), np.float64(m.ms_within)
    k0, df1, df2 = m.k0, m.df1, m.df2
    a = 1.0 - confidence
    with np.errstate(divide="ignore", invalid="ignore"):
        f = msb / msw
        icc1 = (msb - msw) / (msb + (k0 - 1) * msw)
        icck = (msb - msw) / msb
        fl = f / stats.f.ppf(1 - a / 2, df1, df2)
        fu = f * stats.f.ppf(1 - a / 2, df2, df1)
        lo, hi = (fl - 1) / (fl + k0 - 1), (fu - 1) / (fu + k0 - 1)
        lo_k, hi_k = 1 - 1 / fl, 1 - 1 / fu
    return OneWayIcc(
        icc=float(icc1),
        icc_k0=float(icck),
        k0=float(k0),
        n_items=m.n_items,
        n_ratings=m.n_ratings,
        ms_between=float(msb),
        ms_within=float(msw),
        f=float(f),
        df1=float(df1),
        df2=float(df2),
        p=float(stats.f.sf(f, df1, df2)),
        ci_low=float(lo),
        ci_high=float(hi),
        ci_k0_low=float(lo_k),
        ci_k0_high=float(hi_k),
        confidence=confidence,
    )
