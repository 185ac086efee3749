"""F tests and F-distribution confidence intervals of the six ICC forms, term for term as
pingouin 0.7 (Shrout & Fleiss 1979; McGraw & Wong 1996 Table 7). A zero mean square gives
inf or NaN (numpy scalars, as in pingouin), never ZeroDivisionError."""

from __future__ import annotations

import numpy as np
from scipy import stats

from .icc_forms import (
    DESCRIPTIONS,
    FORMS,
    SHROUT_FLEISS_NAMES,
    IccEstimate,
    MeanSquares,
    icc_from_mean_squares,
)


def _f_interval(f: float, df_num: int, df_den: int, k: int, a: float) -> tuple[float, ...]:
    """(F lower, F upper, ICC lower, ICC upper) of an F ratio: Shrout & Fleiss's cases 1 and 3
    (ICC(1,1), ICC(3,1))."""
    f_low = f / stats.f.ppf(1 - a / 2, df_num, df_den)
    f_high = f * stats.f.ppf(1 - a / 2, df_den, df_num)
    return f_low, f_high, (f_low - 1) / (f_low + (k - 1)), (f_high - 1) / (f_high + (k - 1))


def _agreement_interval(
    msb: float, msj: float, mse: float, icc2: float, n: int, k: int, a: float
) -> tuple[float, float]:
    """ICC(A,1) bounds: Satterthwaite-type approximate denominator df v (Shrout & Fleiss
    1979, p. 425)."""
    df1 = n - 1
    df2kd = (n - 1) * (k - 1)
    fj = msj / mse
    vn = df2kd * (k * icc2 * fj + n * (1 + (k - 1) * icc2) - k * icc2) ** 2
    vd = df1 * k**2 * icc2**2 * fj**2 + (n * (1 + (k - 1) * icc2) - k * icc2) ** 2
    v = vn / vd
    f2u = stats.f.ppf(1 - a / 2, n - 1, v)
    f2l = stats.f.ppf(1 - a / 2, v, n - 1)
    low = n * (msb - f2u * mse) / (f2u * (k * msj + (k * n - k - n) * mse) + n * msb)
    high = n * (f2l * msb - mse) / (k * msj + (k * n - k - n) * mse + n * f2l * msb)
    return low, high


def icc_estimates(ms: MeanSquares, confidence: float) -> tuple[IccEstimate, ...]:
    """The six forms with F test, p value and interval, in the order of FORMS."""
    n, k = ms.n_items, ms.n_raters
    msb, msj, mse, msw = (
        np.float64(v) for v in (ms.ms_rows, ms.ms_cols, ms.ms_error, ms.ms_within)
    )
    icc = icc_from_mean_squares(msb, msj, mse, msw, n, k)
    a = 1.0 - confidence
    df1 = n - 1
    df1kd = n * (k - 1)  # one-way: within-items df
    df2kd = (n - 1) * (k - 1)  # two-way: residual df
    with np.errstate(divide="ignore", invalid="ignore"):
        f1k = msb / msw
        f3k = msb / mse
        p1k = float(stats.f.sf(f1k, df1, df1kd))
        p3k = float(stats.f.sf(f3k, df1, df2kd))
        f1l, f1u, l1, u1 = _f_interval(f1k, df1, df1kd, k, a)
        f3l, f3u, l3, u3 = _f_interval(f3k, df1, df2kd, k, a)
        l2, u2 = _agreement_interval(msb, msj, mse, float(icc[1]), n, k, a)
        cis = (
            (l1, u1),
            (l2, u2),
            (l3, u3),
            (1 - 1 / f1l, 1 - 1 / f1u),
            # Spearman-Brown step-up of the ICC(A,1) bounds (McGraw & Wong 1996, Table 7)
            (l2 * k / (1 + l2 * (k - 1)), u2 * k / (1 + u2 * (k - 1))),
            (1 - 1 / f3l, 1 - 1 / f3u),
        )
    fs = (f1k, f3k, f3k, f1k, f3k, f3k)
    df2s = (df1kd, df2kd, df2kd, df1kd, df2kd, df2kd)
    ps = (p1k, p3k, p3k, p1k, p3k, p3k)
    return tuple(
        IccEstimate(
            form=FORMS[i],
            shrout_fleiss=SHROUT_FLEISS_NAMES[i],
            description=DESCRIPTIONS[i],
            icc=float(icc[i]),
            f=float(fs[i]),
            df1=float(df1),
            df2=float(df2s[i]),
            p=ps[i],
            ci_low=float(cis[i][0]),
            ci_high=float(cis[i][1]),
            confidence=confidence,
        )
        for i in range(6)
    )
