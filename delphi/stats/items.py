"""Statistics of one item in one round (whole panel or a stakeholder group), and the
comprehensiveness score of the whole taxonomy.

A rating is an int 1..9; None means "unable to rate" and is in no denominator (panelists
who did not answer count only in `n_invited`). Percentages are on 0-100. The median is the
ordinary sample median whatever the quantile method, which governs only Q1, Q3, P30 and P70:
some Hyndman-Fan types do not give the ordinary median at p = 0.5, and a panel reading
"median 7.5" should get the number everyone computes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from delphi.stats.methods import DEFAULT_QUANTILE_METHOD, check_quantile_method
from delphi.stats.scale import (
    COMPREHENSIVENESS_POINTS,
    FLOAT_TOLERANCE,
    HIGH_BAND,
    LOW_BAND,
    MID_BAND,
    SCALE_POINTS,
    percent,
    valid_ratings,
)

# IPRAS = 2.35 + 1.5 * AI (RAND/UCLA manual): 2.35 is the IPR that signals disagreement for a
# perfectly symmetric distribution, 1.5 the correction per unit of asymmetry.
IPRAS_SYMMETRIC_IPR = 2.35
IPRAS_ASYMMETRY_FACTOR = 1.5

# A stakeholder group with fewer ratings than this is withheld: with a handful of them one
# panelist's rating could be read back from the group's numbers.
DEFAULT_MIN_GROUP_RATERS = 5


@dataclass(frozen=True)
class ItemStatistics:
    """Statistics of one round item for the whole panel or one stakeholder group.

    Field for field the statistics of `delphi.models.RoundItemStatistics` (the model adds the
    keys `round_item` and `group`). `outcome` is empty here; `delphi.consensus` decides it.
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


# The statistics an item without any rating has: nothing but its counts.
_UNRATED: dict[str, None] = dict.fromkeys(
    (
        *("median", "q1", "q3", "iqr", "mean", "sd", "pct_low", "pct_mid", "pct_high"),
        *("p30", "p70", "ipr", "ai", "ipras", "disagreement"),
    )
)


@dataclass(frozen=True)
class WithheldStatistics:
    """Stands in for a stakeholder group's statistics when the group is too small to show."""

    reason: str


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
    check_quantile_method(method=quantile_method)
    values = valid_ratings(ratings, SCALE_POINTS, what="rating")
    n_unable = sum(1 for rating in ratings if rating is None)
    _check_invited(n_invited, n_rated=len(values), n_unable=n_unable)
    counts = {point: 0 for point in SCALE_POINTS}
    for value in values:
        counts[value] += 1
    sizes = {"n_invited": int(n_invited), "n_rated": len(values), "n_unable": n_unable}
    if not values:
        return ItemStatistics(**sizes, counts=counts, **_UNRATED)
    return ItemStatistics(
        **sizes, counts=counts, **_spread(values, quantile_method), **_band_shares(counts)
    )


def _check_invited(n_invited: int, *, n_rated: int, n_unable: int) -> None:
    if isinstance(n_invited, bool) or not isinstance(n_invited, int | np.integer):
        raise ValueError(f"n_invited must be an int, got {n_invited!r}")
    if n_invited < n_rated + n_unable:
        raise ValueError(
            f"n_invited ({n_invited}) is smaller than the number of answers "
            f"({n_rated} ratings + {n_unable} unable to rate)"
        )


def _spread(values: list[int], quantile_method: str) -> dict[str, Any]:
    """Centre, quartiles, percentiles and the RAND/UCLA disagreement flag (IPR > IPRAS)."""
    array = np.asarray(values, dtype=float)
    q1, q3, p30, p70 = (
        float(q) for q in np.quantile(array, [0.25, 0.75, 0.30, 0.70], method=quantile_method)
    )
    ipr = p70 - p30
    ai = abs(5.0 - (p30 + p70) / 2.0)
    ipras = IPRAS_SYMMETRIC_IPR + IPRAS_ASYMMETRY_FACTOR * ai
    return {
        "median": float(np.median(array)),
        "q1": q1,
        "q3": q3,
        "iqr": q3 - q1,
        "mean": float(array.mean()),
        # The sample SD (ddof=1) is undefined for a single rating; None rather than 0 or nan.
        "sd": float(array.std(ddof=1)) if len(values) >= 2 else None,
        "p30": p30,
        "p70": p70,
        "ipr": ipr,
        "ai": ai,
        "ipras": ipras,
        "disagreement": bool(ipr > ipras + FLOAT_TOLERANCE),
    }


def _band_shares(counts: Mapping[int, int]) -> dict[str, float]:
    n_rated = sum(counts.values())
    return {
        "pct_low": percent(sum(counts[p] for p in LOW_BAND), n_rated),
        "pct_mid": percent(sum(counts[p] for p in MID_BAND), n_rated),
        "pct_high": percent(sum(counts[p] for p in HIGH_BAND), n_rated),
    }


def group_item_statistics(
    ratings_by_group: Mapping[str, Sequence[int | None]],
    *,
    n_invited_by_group: Mapping[str, int],
    min_raters: int = DEFAULT_MIN_GROUP_RATERS,
    quantile_method: str = DEFAULT_QUANTILE_METHOD,
) -> dict[str, ItemStatistics | WithheldStatistics]:
    """Statistics per stakeholder group; groups with fewer than `min_raters` ratings withheld.

    The count that decides is the number of panelists in the group who gave a rating (unable
    to rate does not count): those ratings are what the statistics would disclose.
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


def comprehensiveness_summary(scores: Sequence[int | None]) -> ComprehensivenessSummary:
    """Summary of the whole-taxonomy comprehensiveness scores (1-5) of one round.

    None (question not answered) is left out; `n` counts the answers used.
    """
    values = valid_ratings(scores, COMPREHENSIVENESS_POINTS, what="comprehensiveness score")
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
