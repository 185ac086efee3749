"""Per-round Delphi statistics: item ratings on the 1-9 RAND/UCLA scale, stability between
rounds, and the comprehensiveness score of the whole taxonomy.

Pure numpy/scipy; no Django import. The service layer turns `ItemStatistics` into a
`delphi.models.RoundItemStatistics` row with `ItemStatistics.as_model_fields()`; the field
names are the same one to one.

Conventions
- A rating is an int 1..9; `None` means "unable to rate". Panelists who were invited but did
  not answer the item at all are counted only in `n_invited`.
- Everything after `n_invited`, `n_rated` and `n_unable` is computed over the panelists who
  gave a rating (unable-to-rate answers are not ratings, so they are not in any denominator).
- Percentages are on 0-100, not proportions.
- The median is always the ordinary sample median (mean of the two middle values when n is
  even), whatever the quantile method: the quantile method only governs Q1, Q3, P30 and P70.
  Some Hyndman-Fan types (1-4) do not give the ordinary median at p = 0.5, and a panel reading
  "median 7.5" should get the number everyone computes.

Quantile method
- Q1, Q3, P30 and P70 use numpy's `method=` names, restricted to the nine Hyndman & Fan
  (1996) definitions listed in `QUANTILE_METHODS`, so every report can name its type.
- The default is "linear" (type 7). The RAND/UCLA user's manual (Fitch et al. 2001) gives the
  IPR/IPRAS rule but, as far as we could check, does not fix a sample-quantile definition;
  Delphi analyses are mostly run in R (`quantile()` default), Excel (PERCENTILE/QUARTILE and
  their .INC forms) or Python (numpy/pandas default), which all use type 7. Defaulting to it
  means a reader who recomputes our numbers with the usual tools gets the same values.
  Studies analysed in SPSS (type 6, "weibull") can select that instead. With small panels the
  choice moves P30/P70 and therefore the IPRAS disagreement flag, so reports must state it
  (`describe_quantile_method`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import scipy
from scipy import stats as scipy_stats

SCALE_POINTS: tuple[int, ...] = tuple(range(1, 10))
COMPREHENSIVENESS_POINTS: tuple[int, ...] = tuple(range(1, 6))

# RAND/UCLA bands: 1-3 inappropriate / low, 4-6 uncertain / middle, 7-9 appropriate / high.
LOW_BAND: tuple[int, ...] = (1, 2, 3)
MID_BAND: tuple[int, ...] = (4, 5, 6)
HIGH_BAND: tuple[int, ...] = (7, 8, 9)

# IPRAS = 2.35 + 1.5 * AI (RAND/UCLA manual): 2.35 is the IPR that signals disagreement for a
# perfectly symmetric distribution, 1.5 the correction per unit of asymmetry.
IPRAS_SYMMETRIC_IPR = 2.35
IPRAS_ASYMMETRY_FACTOR = 1.5

# Absolute slack for comparisons of interpolated quantiles: P30/P70 come out of floating-point
# interpolation (e.g. 5.8999999999999995 for 5.9), and the IPRAS rule is a strict ">", so an
# exact tie must not flip into "disagreement" on rounding noise.
FLOAT_TOLERANCE = 1e-9

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

DEFAULT_MIN_GROUP_RATERS = 5

WILCOXON_ZERO_METHODS: tuple[str, ...] = ("wilcox", "pratt", "zsplit")


def describe_quantile_method(method: str = DEFAULT_QUANTILE_METHOD) -> str:
    """The sentence a report prints to say how Q1, Q3, P30 and P70 were computed."""
    _check_quantile_method(method)
    return f"numpy method '{method}' = {QUANTILE_METHODS[method]}"


def describe_wilcoxon(zero_method: str = "wilcox") -> str:
    """The sentence a report prints to say how the between-round Wilcoxon p was computed."""
    _check_wilcoxon_zero_method(zero_method)
    return (
        "Wilcoxon signed-rank test on paired ratings, two-sided "
        f"(scipy {scipy.__version__} stats.wilcoxon, method='auto', zero_method='{zero_method}')"
    )


@dataclass(frozen=True)
class ItemStatistics:
    """Statistics of one round item for the whole panel or one stakeholder group.

    Field for field the statistics of `delphi.models.RoundItemStatistics` (the model adds the
    keys `round_item` and `group`). `outcome` is empty here; `delphi.consensus` decides it
    (`dataclasses.replace(stats, outcome=rule.evaluate(stats))`).
    """

    n_invited: int
    n_rated: int
    n_unable: int
    median: float | None
    q1: float | None
    q3: float | None
    iqr: float | None
    mean: float | None
    sd: float | None
    counts: dict[int, int]
    pct_low: float | None
    pct_mid: float | None
    pct_high: float | None
    p30: float | None
    p70: float | None
    ipr: float | None
    ai: float | None
    ipras: float | None
    disagreement: bool | None
    outcome: str = ""

    def as_model_fields(self) -> dict[str, Any]:
        """Keyword arguments for RoundItemStatistics; counts keyed "1".."9" as JSON stores them."""
        fields = asdict(self)
        fields["counts"] = {str(point): n for point, n in self.counts.items()}
        return fields


@dataclass(frozen=True)
class WithheldStatistics:
    """Stands in for a stakeholder group's statistics when the group is too small to show."""

    reason: str


@dataclass(frozen=True)
class RatingStability:
    """How one item's ratings moved between two rounds, over panelists who rated it in both.

    `wilcoxon_note` and `kappa_note` say why a value is missing or needs care (empty otherwise).
    """

    n_paired: int
    pct_unchanged: float | None
    mean_abs_change: float | None
    wilcoxon_statistic: float | None
    wilcoxon_p: float | None
    wilcoxon_note: str
    weighted_kappa: float | None
    kappa_note: str


@dataclass(frozen=True)
class ComprehensivenessSummary:
    """Comprehensiveness of the whole taxonomy (1-5) in one round."""

    n: int
    mean: float | None
    sd: float | None
    median: float | None
    counts: dict[int, int]


def item_statistics(
    ratings: Sequence[int | None],
    *,
    n_invited: int,
    quantile_method: str = DEFAULT_QUANTILE_METHOD,
) -> ItemStatistics:
    """Statistics of one item in one round.

    `ratings` holds one answer per responding panelist: an int 1..9 or None (unable to rate).
    `n_invited` counts everyone asked, including those who did not answer.
    """
    _check_quantile_method(method=quantile_method)
    values = _valid_ratings(ratings, SCALE_POINTS, what="rating")
    n_unable = sum(1 for rating in ratings if rating is None)
    n_rated = len(values)
    if isinstance(n_invited, bool) or not isinstance(n_invited, int | np.integer):
        raise ValueError(f"n_invited must be an int, got {n_invited!r}")
    if n_invited < n_rated + n_unable:
        raise ValueError(
            f"n_invited ({n_invited}) is smaller than the number of answers "
            f"({n_rated} ratings + {n_unable} unable to rate)"
        )

    counts = {point: 0 for point in SCALE_POINTS}
    for value in values:
        counts[value] += 1

    if n_rated == 0:
        return ItemStatistics(
            n_invited=int(n_invited), n_rated=0, n_unable=n_unable,
            median=None, q1=None, q3=None, iqr=None, mean=None, sd=None, counts=counts,
            pct_low=None, pct_mid=None, pct_high=None,
            p30=None, p70=None, ipr=None, ai=None, ipras=None, disagreement=None,
        )  # fmt: skip

    array = np.asarray(values, dtype=float)
    q1, q3, p30, p70 = (
        float(q) for q in np.quantile(array, [0.25, 0.75, 0.30, 0.70], method=quantile_method)
    )
    ipr = p70 - p30
    ai = abs(5.0 - (p30 + p70) / 2.0)
    ipras = IPRAS_SYMMETRIC_IPR + IPRAS_ASYMMETRY_FACTOR * ai

    return ItemStatistics(
        n_invited=int(n_invited),
        n_rated=n_rated,
        n_unable=n_unable,
        median=float(np.median(array)),
        q1=q1,
        q3=q3,
        iqr=q3 - q1,
        mean=float(array.mean()),
        # The sample SD (ddof=1) is undefined for a single rating; None rather than 0 or nan.
        sd=float(array.std(ddof=1)) if n_rated >= 2 else None,
        counts=counts,
        pct_low=_percent(sum(counts[p] for p in LOW_BAND), n_rated),
        pct_mid=_percent(sum(counts[p] for p in MID_BAND), n_rated),
        pct_high=_percent(sum(counts[p] for p in HIGH_BAND), n_rated),
        p30=p30,
        p70=p70,
        ipr=ipr,
        ai=ai,
        ipras=ipras,
        disagreement=bool(ipr > ipras + FLOAT_TOLERANCE),
    )


def group_item_statistics(
    ratings_by_group: Mapping[str, Sequence[int | None]],
    *,
    n_invited_by_group: Mapping[str, int],
    min_raters: int = DEFAULT_MIN_GROUP_RATERS,
    quantile_method: str = DEFAULT_QUANTILE_METHOD,
) -> dict[str, ItemStatistics | WithheldStatistics]:
    """Statistics per stakeholder group; groups with fewer than `min_raters` ratings withheld.

    The count that decides is the number of panelists in the group who gave a rating (unable
    to rate does not count): those ratings are what the statistics would disclose, and with a
    handful of them one panelist's rating can be read back from the group's numbers.
    The group name "" is refused: RoundItemStatistics uses it for the whole panel.
    """
    if isinstance(min_raters, bool) or not isinstance(min_raters, int) or min_raters < 1:
        raise ValueError(f"min_raters must be an int >= 1, got {min_raters!r}")
    if set(ratings_by_group) != set(n_invited_by_group):
        raise ValueError(
            "ratings_by_group and n_invited_by_group must name the same groups; "
            f"got {sorted(ratings_by_group)} and {sorted(n_invited_by_group)}"
        )
    if "" in ratings_by_group:
        raise ValueError('group name "" is reserved for the whole panel')

    withheld = WithheldStatistics(reason=f"withheld: fewer than {min_raters} raters")
    by_group: dict[str, ItemStatistics | WithheldStatistics] = {}
    for group, ratings in ratings_by_group.items():
        statistics = item_statistics(
            ratings, n_invited=n_invited_by_group[group], quantile_method=quantile_method
        )
        by_group[group] = withheld if statistics.n_rated < min_raters else statistics
    return by_group


def rating_stability(
    previous: Mapping[Hashable, int | None],
    current: Mapping[Hashable, int | None],
    *,
    wilcoxon_zero_method: str = "wilcox",
) -> RatingStability:
    """Stability of one item between two rounds, over panelists who rated it in both.

    `previous` and `current` map a panelist key to that panelist's answer (int 1..9 or None).
    Pass them only when the item version is the same in both rounds: a reworded item is a
    different question and its change is not instability. Panelists missing from either
    round, or unable to rate in either, are left out.

    Degenerate cases give documented values instead of exceptions:
    - no paired ratings: every statistic None;
    - every paired rating unchanged: Wilcoxon p = 1.0 and statistic None (no difference to
      rank; scipy's zero_method="zsplit" gives the same p), so a stable item reads as stable;
    - fewer than 6 nonzero differences: p is reported, with a note that the exact two-sided
      test cannot reach 0.05 (its smallest p is 2 / 2**5 = 0.0625 with 5 differences);
    - weighted kappa undefined (both rounds used one and the same scale point, so chance
      disagreement is 0): None with a note.
    `wilcoxon_zero_method` is passed to scipy ("wilcox" drops unchanged pairs, the classical
    test; "pratt" or "zsplit" keep them).
    """
    _check_wilcoxon_zero_method(wilcoxon_zero_method)
    panelists = [
        key
        for key in previous
        if key in current and previous[key] is not None and current[key] is not None
    ]
    before = _valid_ratings([previous[key] for key in panelists], SCALE_POINTS, what="rating")
    after = _valid_ratings([current[key] for key in panelists], SCALE_POINTS, what="rating")
    n_paired = len(panelists)
    if n_paired == 0:
        note = "no panelist rated the item in both rounds"
        return RatingStability(
            n_paired=0, pct_unchanged=None, mean_abs_change=None,
            wilcoxon_statistic=None, wilcoxon_p=None, wilcoxon_note=note,
            weighted_kappa=None, kappa_note=note,
        )  # fmt: skip

    changes = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    n_changed = int(np.count_nonzero(changes))

    if n_changed == 0:
        wilcoxon_statistic = None
        wilcoxon_p: float | None = 1.0
        wilcoxon_note = "every paired rating unchanged; p = 1.0 by convention"
    else:
        result = scipy_stats.wilcoxon(changes, zero_method=wilcoxon_zero_method)
        wilcoxon_statistic = float(result.statistic)
        wilcoxon_p = float(result.pvalue)
        wilcoxon_note = (
            f"only {n_changed} changed rating(s): the exact two-sided p cannot fall below 0.05"
            if n_changed < 6
            else ""
        )

    kappa = quadratic_weighted_kappa(before, after)
    kappa_note = (
        "undefined: both rounds used one and the same scale point (no chance disagreement)"
        if kappa is None
        else ""
    )
    return RatingStability(
        n_paired=n_paired,
        pct_unchanged=_percent(n_paired - n_changed, n_paired),
        mean_abs_change=float(np.abs(changes).mean()),
        wilcoxon_statistic=wilcoxon_statistic,
        wilcoxon_p=wilcoxon_p,
        wilcoxon_note=wilcoxon_note,
        weighted_kappa=kappa,
        kappa_note=kappa_note,
    )


def quadratic_weighted_kappa(
    first: Sequence[int],
    second: Sequence[int],
    *,
    categories: Sequence[int] = SCALE_POINTS,
) -> float | None:
    """Cohen's (1968) weighted kappa with quadratic weights, 1 - sum(w*O) / sum(w*E).

    The categories are the full scale (1..9 by default), not only the points observed, and the
    weight of a cell is ((i - j) / (max - min))**2 on the scale values. This matters: a tool
    that builds the categories from the observed labels (sklearn's cohen_kappa_score without
    `labels`) puts 5, 7 and 9 one step apart instead of two and gives a different kappa.
    Returns None when chance disagreement sum(w*E) is 0 (both raters used one and the same
    category), where kappa is 0/0.
    """
    if len(first) != len(second):
        raise ValueError(f"paired sequences differ in length: {len(first)} and {len(second)}")
    if len(first) == 0:
        return None
    scale = list(categories)
    index = {category: position for position, category in enumerate(scale)}
    for value in (*first, *second):
        if value not in index:
            raise ValueError(f"rating {value!r} is not one of the categories {scale}")

    k = len(scale)
    observed = np.zeros((k, k))
    for a, b in zip(first, second, strict=True):
        observed[index[a], index[b]] += 1
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    values = np.asarray(scale, dtype=float)
    span = values.max() - values.min()
    weights = ((values[:, None] - values[None, :]) / (span if span else 1.0)) ** 2

    chance_disagreement = float((weights * expected).sum())
    if chance_disagreement <= FLOAT_TOLERANCE:
        return None
    return 1.0 - float((weights * observed).sum()) / chance_disagreement


def comprehensiveness_summary(scores: Sequence[int | None]) -> ComprehensivenessSummary:
    """Summary of the whole-taxonomy comprehensiveness scores (1-5) of one round.

    None (question not answered) is left out; `n` counts the answers used.
    """
    values = _valid_ratings(scores, COMPREHENSIVENESS_POINTS, what="comprehensiveness score")
    counts = {point: 0 for point in COMPREHENSIVENESS_POINTS}
    for value in values:
        counts[value] += 1
    n = len(values)
    array = np.asarray(values, dtype=float)
    return ComprehensivenessSummary(
        n=n,
        mean=float(array.mean()) if n else None,
        sd=float(array.std(ddof=1)) if n >= 2 else None,
        median=float(np.median(array)) if n else None,
        counts=counts,
    )


def _valid_ratings(answers: Sequence[int | None], scale: Sequence[int], *, what: str) -> list[int]:
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


def _percent(count: int, total: int) -> float:
    # 100 * count / total keeps integer thresholds exact (100 * 7 / 10 == 70.0).
    return 100.0 * count / total


def _check_wilcoxon_zero_method(zero_method: str) -> None:
    if zero_method not in WILCOXON_ZERO_METHODS:
        raise ValueError(
            f"unknown Wilcoxon zero_method {zero_method!r}; choose one of {WILCOXON_ZERO_METHODS}"
        )


def _check_quantile_method(method: str) -> None:
    if method not in QUANTILE_METHODS:
        raise ValueError(
            f"unknown quantile method {method!r}; choose one of {sorted(QUANTILE_METHODS)}"
        )


__all__ = [
    "COMPREHENSIVENESS_POINTS",
    "DEFAULT_MIN_GROUP_RATERS",
    "DEFAULT_QUANTILE_METHOD",
    "QUANTILE_METHODS",
    "SCALE_POINTS",
    "WILCOXON_ZERO_METHODS",
    "ComprehensivenessSummary",
    "ItemStatistics",
    "RatingStability",
    "WithheldStatistics",
    "comprehensiveness_summary",
    "describe_quantile_method",
    "describe_wilcoxon",
    "group_item_statistics",
    "item_statistics",
    "quadratic_weighted_kappa",
    "rating_stability",
]
