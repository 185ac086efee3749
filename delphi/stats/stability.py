"""How an item's ratings moved between two rounds: % unchanged, mean change, Wilcoxon
signed-rank test and quadratic weighted kappa over the panelists who rated it in both."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from delphi.stats.methods import check_wilcoxon_zero_method
from delphi.stats.scale import FLOAT_TOLERANCE, SCALE_POINTS, percent, valid_ratings

# The exact two-sided Wilcoxon test cannot reach p < 0.05 below 6 nonzero differences (its
# smallest p is 2 / 2**5 = 0.0625 with 5).
WILCOXON_MIN_CHANGES = 6


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


def rating_stability(
    previous: Mapping[Hashable, int | None],
    current: Mapping[Hashable, int | None],
    *,
    wilcoxon_zero_method: str = "wilcox",
) -> RatingStability:
    """Stability of one item between two rounds, over panelists who rated it in both.

    `previous` and `current` map a panelist key to that panelist's answer (int 1..9 or None).
    Pass them only when the item version is the same in both rounds: a reworded item is a
    different question. Panelists missing from either round, or unable to rate in either,
    are left out. Degenerate cases give documented values, not exceptions: no pairs, every
    statistic None; nothing changed, p = 1.0 and no statistic; fewer than 6 changes, p with
    a note; kappa undefined (one and the same point in both rounds), None with a note.
    `wilcoxon_zero_method` goes to scipy ("wilcox" drops unchanged pairs; "pratt", "zsplit").
    """
    check_wilcoxon_zero_method(wilcoxon_zero_method)
    panelists = [
        key
        for key in previous
        if key in current and previous[key] is not None and current[key] is not None
    ]
    before = valid_ratings([previous[key] for key in panelists], SCALE_POINTS, what="rating")
    after = valid_ratings([current[key] for key in panelists], SCALE_POINTS, what="rating")
    n_paired = len(panelists)
    if n_paired == 0:
        note = "no panelist rated the item in both rounds"
        return RatingStability(
            n_paired=0,
            pct_unchanged=None,
            mean_abs_change=None,
            wilcoxon_statistic=None,
            wilcoxon_p=None,
            wilcoxon_note=note,
            weighted_kappa=None,
            kappa_note=note,
        )
    changes = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    statistic, p, note = _wilcoxon(changes, wilcoxon_zero_method)
    kappa = quadratic_weighted_kappa(before, after)
    return RatingStability(
        n_paired=n_paired,
        pct_unchanged=percent(n_paired - int(np.count_nonzero(changes)), n_paired),
        mean_abs_change=float(np.abs(changes).mean()),
        wilcoxon_statistic=statistic,
        wilcoxon_p=p,
        wilcoxon_note=note,
        weighted_kappa=kappa,
        kappa_note=(
            "undefined: both rounds used one and the same scale point (no chance disagreement)"
            if kappa is None
            else ""
        ),
    )


def _wilcoxon(changes: np.ndarray, zero_method: str) -> tuple[float | None, float, str]:
    """Statistic, p and note of the signed-rank test on the paired changes. With nothing
    changed there is no difference to rank: p = 1.0 (scipy's "zsplit" gives the same), so a
    stable item reads as stable."""
    n_changed = int(np.count_nonzero(changes))
    if n_changed == 0:
        return None, 1.0, "every paired rating unchanged; p = 1.0 by convention"
    result = scipy_stats.wilcoxon(changes, zero_method=zero_method)
    note = (
        f"only {n_changed} changed rating(s): the exact two-sided p cannot fall below 0.05"
        if n_changed < WILCOXON_MIN_CHANGES
        else ""
    )
    return float(result.statistic), float(result.pvalue), note


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
