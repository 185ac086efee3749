"""How the statistics are computed, as reports must state it: quantile method and Wilcoxon.

Q1, Q3, P30 and P70 use numpy's `method=` names, restricted to the nine Hyndman & Fan (1996)
definitions so every report can name its type. The default is type 7 ("linear"), the default
of R, Excel and numpy, so a reader who recomputes our numbers with the usual tools gets the
same values; studies analysed in SPSS can choose type 6 ("weibull"). With small panels the
choice moves P30/P70 and so the IPRAS disagreement flag, hence `describe_quantile_method`.
"""

from __future__ import annotations

import scipy

QUANTILE_METHODS: dict[str, str] = {
    "inverted_cdf": "Hyndman-Fan type 1 (inverse of the empirical CDF)",
    "averaged_inverted_cdf": "Hyndman-Fan type 2 (empirical CDF, averaging at jumps; SAS default)",
    "closest_observation": "Hyndman-Fan type 3 (nearest even order statistic)",
    "interpolated_inverted_cdf": "Hyndman-Fan type 4 (linear interpolation of the empirical CDF)",
    "hazen": "Hyndman-Fan type 5 (Hazen)",
    "weibull": "Hyndman-Fan type 6 (Weibull; SPSS, Minitab, Excel PERCENTILE.EXC)",
    "linear": "Hyndman-Fan type 7 (R default, numpy/pandas default, Excel PERCENTILE.INC)",
    "median_unbiased": "Hyndman-Fan type 8 (median-unbiased; Hyndman & Fan's recommendation)",
    "normal_unbiased": "Hyndman-Fan type 9 (normal-unbiased)",
}
DEFAULT_QUANTILE_METHOD = "linear"

WILCOXON_ZERO_METHODS: tuple[str, ...] = ("wilcox", "pratt", "zsplit")


def describe_quantile_method(method: str = DEFAULT_QUANTILE_METHOD) -> str:
    """The sentence a report prints to say how Q1, Q3, P30 and P70 were computed."""
    check_quantile_method(method)
    return f"numpy method '{method}' = {QUANTILE_METHODS[method]}"


def describe_wilcoxon(zero_method: str = "wilcox") -> str:
    """The sentence a report prints to say how the between-round Wilcoxon p was computed."""
    check_wilcoxon_zero_method(zero_method)
    return (
        "Wilcoxon signed-rank test on paired ratings, two-sided "
        f"(scipy {scipy.__version__} stats.wilcoxon, method='auto', zero_method='{zero_method}')"
    )


def check_quantile_method(method: str) -> None:
    if method not in QUANTILE_METHODS:
        raise ValueError(
            f"unknown quantile method {method!r}; choose one of {sorted(QUANTILE_METHODS)}"
        )


def check_wilcoxon_zero_method(zero_method: str) -> None:
    if zero_method not in WILCOXON_ZERO_METHODS:
        raise ValueError(
            f"unknown Wilcoxon zero_method {zero_method!r}; choose one of {WILCOXON_ZERO_METHODS}"
        )
