"""Krippendorff's alpha on a long table with missing ratings (Krippendorff 2011, "Computing
Krippendorff's Alpha-Reliability": alpha = 1 - D_o / D_e over pairable values).

Nominal and ratio go to the ``krippendorff`` package, fed a units x values count matrix
built here in linear time (its memory grows with units x values^2: fine for Likert scales,
not for continuous scores). Interval is computed in closed form in O(N):
alpha = 1 - (n - 1) sum_u (m_u SS_u / (m_u - 1)) / (n SS_tot) over pairable units u with m_u
ratings, equal to the package wherever the package runs. Ordinal is the same closed form on
mid-ranks: Krippendorff's ordinal metric for values c < k with frequencies n_g is
(sum_{g=c..k} n_g - (n_c + n_k) / 2)^2 = (r_k - r_c)^2 with the mid-rank
r_c = sum_{g<c} n_g + n_c / 2 over the pairable values, so ordinal alpha is interval alpha on
those ranks (O(N log N), any number of distinct values).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy.stats import rankdata

from .common import examples, numeric_values, require_columns

LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")


@dataclass(frozen=True)
class AlphaResult:
    """Krippendorff's alpha with the counts a report needs."""

    alpha: float  # NaN when undefined (fewer than 2 pairable values or no variation at all)
    level: str
    n_units: int  # pairable units (>= 2 ratings)
    n_values: int  # pairable values
    n_raters: int
    method: str  # "closed form" or "krippendorff <version>"


def interval_alpha(units: npt.ArrayLike, values: npt.ArrayLike) -> float:
    """Interval-level alpha in linear time from parallel arrays of unit labels and values.

    Missing values (NaN) are ignored; units with fewer than 2 values are not pairable and are
    dropped. Returns NaN when there are fewer than two pairable values or SS_tot = 0.
    """
    v = np.asarray(values, dtype=np.float64)
    codes, _ = pd.factorize(np.asarray(units))
    keep = ~np.isnan(v) & (codes >= 0)
    v, codes = v[keep], codes[keep]
    return _interval_alpha_codes(codes, v)[0]


def _interval_alpha_codes(codes: np.ndarray, v: np.ndarray) -> tuple[float, int, int]:
    if v.size == 0:
        return float("nan"), 0, 0
    m = np.bincount(codes)
    pairable = m[codes] >= 2
    codes, v = codes[pairable], v[pairable]
    if v.size < 2:
        return float("nan"), 0, int(v.size)
    m = np.bincount(codes).astype(np.float64)
    present = m > 0
    # Centre on the pooled mean first: sums of squares about it lose no precision.
    v = v - v.mean()
    unit_mean = np.zeros_like(m)
    unit_mean[present] = np.bincount(codes, weights=v)[present] / m[present]
    ss_u = np.bincount(codes, weights=(v - unit_mean[codes]) ** 2)
    ss_tot = float(np.dot(v, v))
    n = float(v.size)
    n_units = int(present.sum())
    if ss_tot == 0.0:
        return float("nan"), n_units, int(n)
    within = float(np.sum(m[present] * ss_u[present] / (m[present] - 1)))
    return 1.0 - (n - 1) * within / (n * ss_tot), n_units, int(n)


def _ordinal_alpha_codes(codes: np.ndarray, v: np.ndarray) -> tuple[float, int, int]:
    if v.size:
        m = np.bincount(codes)
        pairable = m[codes] >= 2
        codes, v = codes[pairable], v[pairable]
    # Average ranks are the mid-ranks plus 1/2: a shift, which alpha ignores.
    return _interval_alpha_codes(codes, rankdata(v, method="average") if v.size else v)


def ordinal_alpha(units: npt.ArrayLike, values: npt.ArrayLike) -> float:
    """Ordinal-level alpha from parallel arrays of unit labels and values (NaN = missing);
    the ordered domain is the observed values (see the module docstring)."""
    v = np.asarray(values, dtype=np.float64)
    codes, _ = pd.factorize(np.asarray(units))
    keep = ~np.isnan(v) & (codes >= 0)
    return _ordinal_alpha_codes(codes[keep], v[keep])[0]


def _package_version() -> str:
    try:
        return version("krippendorff")
    except PackageNotFoundError:  # pragma: no cover - the package is a dependency
        return "unknown"


def krippendorff_alpha(
    table: pd.DataFrame,
    *,
    level: str = "interval",
    unit: str = "item",
    rater: str = "rater",
    value: str = "value",
) -> AlphaResult:
    """Krippendorff's alpha from a long table (one row per unit and rater).

    Rows with a missing value are ignored (that rating is missing). Duplicate (unit, rater)
    rows raise ValueError. ``level`` is "nominal", "ordinal", "interval" or "ratio";
    "interval" and "ordinal" use the closed forms, the others the ``krippendorff`` package.
    The ordinal metric uses the observed values as the ordered domain (the package default),
    so ordinal alpha depends only on the order of the values, not their spacing.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    require_columns(table, (unit, rater, value))
    values = numeric_values(table[value], what=value)
    keep = ~np.isnan(values)
    # Label order is irrelevant to alpha: factorize without sorting (faster).
    u_codes, units = pd.factorize(table[unit].to_numpy()[keep])
    r_codes, raters = pd.factorize(table[rater].to_numpy()[keep])
    values = values[keep]
    if (u_codes < 0).any() or (r_codes < 0).any():
        raise ValueError(f"columns {unit!r} and {rater!r} must not have missing labels")
    if values.size:
        k = len(raters)
        flat = u_codes.astype(np.int64) * k + r_codes
        if len(units) * k <= 1 << 26:  # a dense count of cells is cheaper than a sort
            counts = np.bincount(flat, minlength=len(units) * k)
            uniq = np.arange(counts.size)
        else:
            uniq, counts = np.unique(flat, return_counts=True)
        if counts.max() > 1:
            dup = uniq[counts > 1]
            where = [(units[c // k], raters[c % k]) for c in dup[:5]]
            raise ValueError(
                f"{dup.size} duplicate ({unit}, {rater}) pair(s), e.g. {examples(where)}; "
                "alpha needs one value per rater and unit"
            )
    if level == "interval":
        a, n_units, n_values = _interval_alpha_codes(u_codes, values)
        return AlphaResult(a, level, n_units, n_values, len(raters), "closed form")
    if level == "ordinal":
        a, n_units, n_values = _ordinal_alpha_codes(u_codes, values)
        return AlphaResult(a, level, n_units, n_values, len(raters), "closed form (mid-ranks)")
    return _package_alpha(u_codes, values, level, len(raters))


def _package_alpha(codes: np.ndarray, values: np.ndarray, level: str, n_raters: int) -> AlphaResult:
    import krippendorff  # local import: only the non-interval levels need it

    if values.size:
        m = np.bincount(codes)
        pairable = m[codes] >= 2
        codes, values = codes[pairable], values[pairable]
    if values.size < 2:
        return AlphaResult(
            float("nan"), level, 0, int(values.size), n_raters, f"krippendorff {_package_version()}"
        )
    # Compact unit codes and value codes, then one bincount gives the (units x V) counts.
    codes, _ = pd.factorize(codes, sort=True)
    domain, v_codes = np.unique(values, return_inverse=True)
    n_units = int(codes.max()) + 1
    counts = np.bincount(
        codes.astype(np.int64) * domain.size + v_codes, minlength=n_units * domain.size
    ).reshape(n_units, domain.size)
    if domain.size == 1:
        a = float("nan")  # no variation at all: D_e = 0
    else:
        a = float(
            krippendorff.alpha(value_counts=counts, value_domain=domain, level_of_measurement=level)
        )
    return AlphaResult(
        a, level, n_units, int(values.size), n_raters, f"krippendorff {_package_version()}"
    )
