"""Intraclass correlation coefficients on a complete items x raters matrix.

Sources
-------
- Shrout, P. E. & Fleiss, J. L. (1979). Intraclass correlations: uses in assessing rater
  reliability. Psychological Bulletin 86(2), 420-428 (forms ICC(1,1) ... ICC(3,k), their F
  tests and confidence intervals; the approximate df for ICC(2,1) are their eq. for case 2).
- McGraw, K. O. & Wong, S. P. (1996). Forming inferences about some intraclass correlation
  coefficients. Psychological Methods 1(1), 30-46 (names ICC(A,1) = absolute agreement,
  ICC(C,1) = consistency, Table 7 intervals).
- The six estimates, F statistics, p values and interval formulas are written to agree with
  ``pingouin.intraclass_corr`` 0.7 (which follows the two papers above), except that the
  interval bounds here are not rounded to two decimals.

Mean squares of the two-way layout without replication (n items = rows, k raters = columns):
MSR = SSR / (n-1), MSC = SSC / (k-1), MSE = SSE / ((n-1)(k-1)), MSW = (SSC + SSE) / (n(k-1)).

- ICC(1,1) = (MSR - MSW) / (MSR + (k-1) MSW)
- ICC(A,1) = ICC(2,1) = (MSR - MSE) / (MSR + (k-1) MSE + k (MSC - MSE) / n)
- ICC(C,1) = ICC(3,1) = (MSR - MSE) / (MSR + (k-1) MSE)
- ICC(1,k) = (MSR - MSW) / MSR
- ICC(A,k) = (MSR - MSE) / (MSR + (MSC - MSE) / n)
- ICC(C,k) = (MSR - MSE) / MSR   (= Cronbach's alpha)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from ._common import examples, numeric_values, require_columns

#: Canonical names in the order pingouin reports them (McGraw & Wong notation).
FORMS: tuple[str, ...] = ("ICC(1,1)", "ICC(A,1)", "ICC(C,1)", "ICC(1,k)", "ICC(A,k)", "ICC(C,k)")
#: Shrout & Fleiss names of the same six forms, same order.
SHROUT_FLEISS_NAMES: tuple[str, ...] = ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")
_DESCRIPTIONS: tuple[str, ...] = (
    "one-way random, single rater",
    "two-way random, absolute agreement, single rater",
    "two-way mixed, consistency, single rater",
    "one-way random, average of k raters",
    "two-way random, absolute agreement, average of k raters",
    "two-way mixed, consistency, average of k raters",
)


def _build_aliases() -> dict[str, str]:
    aliases: dict[str, str] = {}
    numeric = ("1", "2", "3")
    for i, (form, sf) in enumerate(zip(FORMS, SHROUT_FLEISS_NAMES, strict=True)):
        aliases[form.upper()] = form
        aliases[sf.upper()] = form
        single = i < 3
        num = numeric[i % 3]
        aliases[f"ICC({num},{'1' if single else 'K'})"] = form
    return aliases


_ALIASES = _build_aliases()


def canonical_form(form: str) -> str:
    """Map any accepted spelling (``"ICC2"``, ``"ICC(2,1)"``, ``"icc(a,1)"``, ``"ICC3k"``) to the
    canonical McGraw & Wong name used in :data:`FORMS`."""
    key = form.replace(" ", "").upper()
    try:
        return _ALIASES[key]
    except KeyError:
        raise ValueError(
            f"unknown ICC form {form!r}; use one of {list(FORMS)} or {list(SHROUT_FLEISS_NAMES)}"
        ) from None


@dataclass(frozen=True)
class MeanSquares:
    """Mean squares of the two-way layout (items = rows, raters = columns), one rating per cell."""

    n_items: int
    n_raters: int
    ms_rows: float
    ms_cols: float
    ms_error: float
    ms_within: float


@dataclass(frozen=True)
class IccEstimate:
    """One ICC form with its F test and F-distribution confidence interval."""

    form: str  # McGraw & Wong name, e.g. "ICC(A,1)"
    shrout_fleiss: str  # Shrout & Fleiss name, e.g. "ICC2"
    description: str
    icc: float
    f: float
    df1: float
    df2: float
    p: float
    ci_low: float
    ci_high: float
    confidence: float


@dataclass(frozen=True)
class IccTable:
    """All six ICC forms for one complete matrix."""

    n_items: int
    n_raters: int
    mean_squares: MeanSquares
    estimates: tuple[IccEstimate, ...]

    def get(self, form: str) -> IccEstimate:
        """The estimate for ``form`` (any spelling accepted by :func:`canonical_form`)."""
        return self.estimates[FORMS.index(canonical_form(form))]

    def to_frame(self) -> pd.DataFrame:
        """One row per form, columns as in pingouin plus the Shrout & Fleiss name."""
        return pd.DataFrame(
            {
                "form": [e.form for e in self.estimates],
                "shrout_fleiss": [e.shrout_fleiss for e in self.estimates],
                "description": [e.description for e in self.estimates],
                "icc": [e.icc for e in self.estimates],
                "f": [e.f for e in self.estimates],
                "df1": [e.df1 for e in self.estimates],
                "df2": [e.df2 for e in self.estimates],
                "p": [e.p for e in self.estimates],
                "ci_low": [e.ci_low for e in self.estimates],
                "ci_high": [e.ci_high for e in self.estimates],
            }
        )


# --------------------------------------------------------------------------------------------
# Building the matrix


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


def _as_matrix(matrix: npt.ArrayLike | pd.DataFrame) -> np.ndarray:
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


# --------------------------------------------------------------------------------------------
# Core formulas (vectorised over any leading shape)


def mean_squares(matrix: npt.ArrayLike | pd.DataFrame) -> MeanSquares:
    """Two-way ANOVA mean squares of a complete items x raters matrix.

    Computed from row, column and grand means in one vectorised pass; SSE is the sum of squared
    interaction residuals x - row - col + grand (not SST - SSR - SSC) so that it is accurate
    even when the residual is tiny.
    """
    x = _as_matrix(matrix)
    msr, msc, mse, msw = _mean_squares_nd(x[None, :, :])
    n, k = x.shape
    return MeanSquares(n, k, float(msr[0]), float(msc[0]), float(mse[0]), float(msw[0]))


def _mean_squares_nd(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
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


def icc_from_mean_squares(
    msr: npt.ArrayLike,
    msc: npt.ArrayLike,
    mse: npt.ArrayLike,
    msw: npt.ArrayLike,
    n: npt.ArrayLike,
    k: int,
) -> np.ndarray:
    """The six ICC forms (last axis, order :data:`FORMS`) from mean squares; vectorised.

    ``n`` may be an array (resamples with item weights use the total weight as n).
    Formulas: Shrout & Fleiss (1979) Table 2 / McGraw & Wong (1996) Table 4.
    """
    msr, msc, mse, msw, n = (np.asarray(a, dtype=np.float64) for a in (msr, msc, mse, msw, n))
    with np.errstate(divide="ignore", invalid="ignore"):
        icc1 = (msr - msw) / (msr + (k - 1) * msw)
        icc2 = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
        icc3 = (msr - mse) / (msr + (k - 1) * mse)
        icc1k = (msr - msw) / msr
        icc2k = (msr - mse) / (msr + (msc - mse) / n)
        icc3k = (msr - mse) / msr
    return np.stack([icc1, icc2, icc3, icc1k, icc2k, icc3k], axis=-1)


def _estimates(ms: MeanSquares, confidence: float) -> tuple[IccEstimate, ...]:
    """F tests and F-distribution intervals, term for term as pingouin 0.7 / Shrout & Fleiss."""
    n, k = ms.n_items, ms.n_raters
    # numpy scalars: a zero mean square gives inf/nan (as in pingouin), not ZeroDivisionError
    msb, msj, mse, msw = (
        np.float64(v) for v in (ms.ms_rows, ms.ms_cols, ms.ms_error, ms.ms_within)
    )
    icc = icc_from_mean_squares(msb, msj, mse, msw, n, k)
    icc2 = float(icc[1])
    a = 1.0 - confidence
    df1 = n - 1
    df1kd = n * (k - 1)  # one-way: within-items df
    df2kd = (n - 1) * (k - 1)  # two-way: residual df
    with np.errstate(divide="ignore", invalid="ignore"):
        f1k = msb / msw
        f3k = msb / mse
        p1k = float(stats.f.sf(f1k, df1, df1kd))
        p3k = float(stats.f.sf(f3k, df1, df2kd))
        # Cases 1 and 3 (Shrout & Fleiss eqs. for ICC(1,1) and ICC(3,1); McGraw & Wong Table 7)
        f1l = f1k / stats.f.ppf(1 - a / 2, df1, df1kd)
        f1u = f1k * stats.f.ppf(1 - a / 2, df1kd, df1)
        l1 = (f1l - 1) / (f1l + (k - 1))
        u1 = (f1u - 1) / (f1u + (k - 1))
        f3l = f3k / stats.f.ppf(1 - a / 2, df1, df2kd)
        f3u = f3k * stats.f.ppf(1 - a / 2, df2kd, df1)
        l3 = (f3l - 1) / (f3l + (k - 1))
        u3 = (f3u - 1) / (f3u + (k - 1))
        # Case 2: Satterthwaite-type approximate denominator df v (Shrout & Fleiss 1979, p. 425)
        fj = msj / mse
        vn = df2kd * (k * icc2 * fj + n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        vd = df1 * k**2 * icc2**2 * fj**2 + (n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        v = vn / vd
        f2u = stats.f.ppf(1 - a / 2, n - 1, v)
        f2l = stats.f.ppf(1 - a / 2, v, n - 1)
        l2 = n * (msb - f2u * mse) / (f2u * (k * msj + (k * n - k - n) * mse) + n * msb)
        u2 = n * (f2l * msb - mse) / (k * msj + (k * n - k - n) * mse + n * f2l * msb)
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
            description=_DESCRIPTIONS[i],
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
    return IccTable(ms.n_items, ms.n_raters, ms, _estimates(ms, confidence))


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


# --------------------------------------------------------------------------------------------
# Batches (bootstrap)


def icc_batch_all(matrices: npt.ArrayLike) -> np.ndarray:
    """All six ICC forms for a stack of complete matrices: (B, n, k) -> (B, 6), order FORMS.

    Fully vectorised (no loop over B); memory about three times the input.
    """
    x = np.asarray(matrices, dtype=np.float64)
    if x.ndim != 3:
        raise ValueError(f"expected a (resamples, items, raters) array, got shape {x.shape}")
    _, n, k = x.shape
    if n < 2 or k < 2:
        raise ValueError(f"need at least 2 items and 2 raters, got {n} x {k}")
    msr, msc, mse, msw = _mean_squares_nd(x)
    return icc_from_mean_squares(msr, msc, mse, msw, n, k)


def icc_batch(matrices: npt.ArrayLike, form: str = "ICC(A,1)") -> np.ndarray:
    """One ICC form for a stack of complete matrices: (B, n, k) -> (B,)."""
    return icc_batch_all(matrices)[:, FORMS.index(canonical_form(form))]


def icc_item_moments(matrix: npt.ArrayLike | pd.DataFrame) -> np.ndarray:
    """Per-item sufficient statistics (n, 4 + k) such that ``weights @ moments`` gives, for item
    multiplicities ``weights``, everything the mean squares need (see :func:`icc_from_moments`).

    Columns: 1, row sum, row sum squared, row sum of squares, then the k ratings. The data are
    first shifted by the grand mean and scaled by the overall SD (ICC is invariant to one
    common affine change) so that the subtractive sums-of-squares formulas lose no precision.
    """
    x = _as_matrix(matrix)
    scale = x.std()
    x = (x - x.mean()) / (scale if scale > 0 else 1.0)
    rsum = x.sum(axis=1)
    return np.column_stack([np.ones(x.shape[0]), rsum, rsum**2, np.square(x).sum(axis=1), x])


def icc_from_moments(sums: np.ndarray, k: int) -> np.ndarray:
    """Six ICC forms (B, 6) from weighted moment sums (B, 4 + k) = weights @ icc_item_moments.

    With integer weights w_i (bootstrap multiplicities) this equals the ICC of the matrix that
    repeats item i w_i times, with n = sum w_i; with 1 - e_i it is the leave-one-out ICC.
    """
    s = np.atleast_2d(np.asarray(sums, dtype=np.float64))
    big_n = s[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = s[:, 1] ** 2 / (big_n * k)
        sst = s[:, 3] - corr
        ssr = s[:, 2] / k - corr
        ssc = np.square(s[:, 4:]).sum(axis=1) / big_n - corr
        sse = sst - ssr - ssc
        msr = ssr / (big_n - 1)
        msc = ssc / (k - 1)
        mse = sse / ((big_n - 1) * (k - 1))
        msw = (ssc + sse) / (big_n * (k - 1))
    return icc_from_mean_squares(msr, msc, mse, msw, big_n, k)
