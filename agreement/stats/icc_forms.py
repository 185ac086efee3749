"""The six ICC forms: their names in both notations, the results they are reported in, and
their formulas from the two-way mean squares (n items = rows, k raters = columns;
MSW = (SSC + SSE) / (n(k-1))). Shrout & Fleiss (1979) Table 2; McGraw & Wong (1996) Table 4.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

#: Canonical names in the order pingouin reports them (McGraw & Wong notation).
FORMS: tuple[str, ...] = ("ICC(1,1)", "ICC(A,1)", "ICC(C,1)", "ICC(1,k)", "ICC(A,k)", "ICC(C,k)")
#: Shrout & Fleiss names of the same six forms, same order.
SHROUT_FLEISS_NAMES: tuple[str, ...] = ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")
DESCRIPTIONS: tuple[str, ...] = (
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
