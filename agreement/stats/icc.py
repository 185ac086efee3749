"""Intraclass correlation coefficients on a complete items x raters matrix: all six forms
(see :mod:`.icc_forms`) with their F tests and intervals, written to agree with
``pingouin.intraclass_corr`` 0.7 (Shrout & Fleiss 1979; McGraw & Wong 1996), except that
the interval bounds are not rounded. Incomplete designs: :mod:`.icc_incomplete`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from .common import examples, numeric_values, require_columns
from .icc_forms import IccTable, MeanSquares
from .icc_intervals import icc_estimates


def icc_matrix_from_long(
    table: pd.DataFrame,
    *,
    item: str = "item",
    rater: str = "rater",
    value: str = "value",
) -> pd.DataFrame:
    """Complete items x raters matrix (index = items, columns = raters, both sorted) from a long
    table with one row per (item, rater).

    Uses ``pandas.factorize`` and one ``numpy.bincount``: linear in the number of rows, no
    pivot_table aggregation (which would silently average duplicates).

    Raises ValueError naming the problem: missing columns, missing labels, non-numeric or
    missing values, duplicate (item, rater) rows, or empty cells (an item not rated by every
    rater; use :mod:`agreement.stats.icc_incomplete` for incomplete designs).
    """
    require_columns(table, (item, rater, value))
    if len(table) == 0:
        raise ValueError("the long table is empty")
    i_codes, items = pd.factorize(table[item], sort=True)
    r_codes, raters = pd.factorize(table[rater], sort=True)
    if (i_codes < 0).any():
        raise ValueError(f"column {item!r} has {(i_codes < 0).sum()} missing label(s)")
    if (r_codes < 0).any():
        raise ValueError(f"column {rater!r} has {(r_codes < 0).sum()} missing label(s)")
    values = numeric_values(table[value], what=value)
    n, k = len(items), len(raters)
    flat = i_codes.astype(np.int64) * k + r_codes
    nan = np.isnan(values)
    if nan.any():
        where = [(items[i], raters[j]) for i, j in zip(i_codes[nan], r_codes[nan], strict=True)]
        raise ValueError(
            f"{nan.sum()} missing value(s) in column {value!r}, e.g. (item, rater) = "
            f"{examples(where)}; drop them and use an incomplete-design estimator"
        )
    counts = np.bincount(flat, minlength=n * k)
    if counts.max() > 1:
        dup = np.flatnonzero(counts > 1)
        where = [(items[c // k], raters[c % k]) for c in dup[:5]]
        raise ValueError(
            f"{dup.size} duplicate (item, rater) cell(s), e.g. {examples(where)}; "
            "aggregate them (e.g. the mean over criteria) first"
        )
    if counts.min() == 0:
        empty = np.flatnonzero(counts == 0)
        where = [(items[c // k], raters[c % k]) for c in empty[:5]]
        raise ValueError(
            f"incomplete design: {empty.size} of {n * k} (item, rater) cells have no rating, "
            f"e.g. {examples(where)}; use "
            "agreement.stats.icc_incomplete or drop incompletely rated items"
        )
    matrix = np.empty(n * k, dtype=np.float64)
    matrix[flat] = values
    return pd.DataFrame(
        matrix.reshape(n, k),
        index=pd.Index(items, name=item),
        columns=pd.Index(raters, name=rater),
    )


def as_matrix(matrix: npt.ArrayLike | pd.DataFrame) -> np.ndarray:
    x = np.asarray(matrix, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"expected a 2-D items x raters matrix, got shape {x.shape}")
    n, k = x.shape
    if n < 2 or k < 2:
        raise ValueError(f"need at least 2 items and 2 raters, got {n} x {k}")
    if not np.isfinite(x).all():
        raise ValueError(
            "matrix has missing or non-finite ratings; the complete-data ICC needs every cell "
            "(use agreement.stats.icc_incomplete for incomplete designs)"
        )
    return x


def mean_squares(matrix: npt.ArrayLike | pd.DataFrame) -> MeanSquares:
    """Two-way ANOVA mean squares of a complete items x raters matrix.

    Computed from row, column and grand means in one vectorised pass; SSE is the sum of squared
    interaction residuals x - row - col + grand (not SST - SSR - SSC) so that it is accurate
    even when the residual is tiny.
    """
    x = as_matrix(matrix)
    msr, msc, mse, msw = mean_squares_nd(x[None, :, :])
    n, k = x.shape
    return MeanSquares(n, k, float(msr[0]), float(msc[0]), float(mse[0]), float(msw[0]))


def mean_squares_nd(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mean squares for a stack of matrices, shape (B, n, k) -> four arrays of shape (B,)."""
    _, n, k = x.shape
    grand = x.mean(axis=(1, 2))
    rows = x.mean(axis=2)
    cols = x.mean(axis=1)
    ssr = k * np.square(rows - grand[:, None]).sum(axis=1)
    ssc = n * np.square(cols - grand[:, None]).sum(axis=1)
    resid = x - rows[:, :, None] - cols[:, None, :] + grand[:, None, None]
    sse = np.einsum("bij,bij->b", resid, resid)
    msr = ssr / (n - 1)
    msc = ssc / (k - 1)
    mse = sse / ((n - 1) * (k - 1))
    msw = (ssc + sse) / (n * (k - 1))
    return msr, msc, mse, msw


def icc(matrix: npt.ArrayLike | pd.DataFrame, *, confidence: float = 0.95) -> IccTable:
    """All six ICC forms of a complete items x raters matrix, with F tests and intervals.

    Equal to ``pingouin.intraclass_corr`` (0.7) on the same data to floating-point precision,
    except that the intervals are not rounded. A matrix with no residual variance gives
    ICC(3,.) = 1 and a huge F (inf if MSE is exactly 0; rounding usually leaves ~1e-30);
    a constant matrix gives NaN.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    ms = mean_squares(matrix)
    return IccTable(ms.n_items, ms.n_raters, ms, icc_estimates(ms, confidence))


def icc_from_long(
    table: pd.DataFrame,
    *,
    item: str = "item",
    rater: str = "rater",
    value: str = "value",
    confidence: float = 0.95,
) -> IccTable:
    """:func:`icc` on the matrix built by :func:`icc_matrix_from_long` (complete designs only)."""
    matrix = icc_matrix_from_long(table, item=item, rater=rater, value=value)
    return icc(matrix.to_numpy(), confidence=confidence)
