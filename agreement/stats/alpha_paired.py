"""Ordinal alpha of a two-column table (per item a first value c_i and a second value z_i,
both or neither present) for many item resamples at once, without ranking the pooled 2n
values of every resample.

Where it is used (the machine-vs-clinicians alpha, :mod:`.medhelm.alpha`) every machine of a
report's row pairs the *same* first column (the clinicians' mean z-scores of the same
resamples) with its own second column, and the second column is a fixed sorted set of levels
mapped by one increasing affine map per resample (the machine's z-scores of its composites).
So the first column is ranked once per row (:func:`own_ranks`, kept by the caller), the second
needs no sort, and a value's pooled mid-rank is its rank in its own column plus the weight of
the other column below it:

    r(c_i) = own_c(i) + Z(< c_i),   r(z_i) = own_z(level_i) + C(< z_i)

with C(< z_g) read from how many levels lie below each c (one histogram per resample). That
holds wherever no value of one column is tied (within :data:`.alpha_batch.TIE_TOLERANCE`)
with a value of the other, and the tie groups within each column are those of the pooled
values; :func:`paired_ordinal_alpha` checks both per resample and says which resamples it
computed, so the caller ranks the pooled values of the others (rare: a near-tie between a
clinicians' mean and a machine z-score).

Mid-ranks are halves and the weights whole numbers, so every sum below is exact (far below
2^53) and the alphas equal :func:`.alpha_batch.weighted_alphas` on the pooled values bit for
bit, not only to rounding (tests/agreement/stats/test_alpha_paired.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .alpha_batch import TIE_TOLERANCE, sorted_midranks, sorted_rows, unsorted


@dataclass(frozen=True)
class OwnRanks:
    """One column's weighted mid-ranks among its own values, per resample."""

    ranks: np.ndarray  # (B, n); 0 where the value has no weight
    sorted_values: np.ndarray  # (B, n) each row ascending, +inf where no weight (at the end)
    positions: np.ndarray  # (B, n) where each sorted value sits in the flattened (B, n) input
    scale: np.ndarray  # (B,) the largest finite |value| with weight (0 if none)
    gap: np.ndarray  # (B,) the smallest step between neighbours that is not a tie (inf if none)
    tie_cubes: np.ndarray  # (B,) the sum over tie groups of (the group's weight)^3
    finite: np.ndarray  # (B,) every value with weight is finite


def own_ranks(values: np.ndarray, weights: np.ndarray) -> OwnRanks:
    """Weighted mid-ranks of ``values`` (B, n) among themselves (weights (B, n); values of
    weight 0 take no part), with what :func:`paired_ordinal_alpha` needs to check that its
    tie groups are the pooled ones."""
    active = weights > 0
    sv, sw, positions, scale = sorted_rows(values, weights)
    finite = np.isfinite(np.where(active, values, 0.0)).all(axis=1)
    mid, gap, cubes = sorted_midranks(sv, sw, TIE_TOLERANCE * scale, with_gap=True)
    return OwnRanks(
        ranks=np.where(active, unsorted(mid, positions), 0.0),
        sorted_values=sv,
        positions=positions,
        scale=scale,
        gap=gap,
        tie_cubes=cubes,
        finite=finite,
    )


def paired_ordinal_alpha(
    first: np.ndarray,
    first_ranks: OwnRanks,
    levels: np.ndarray,
    level: np.ndarray,
    weights: np.ndarray,
    below_hint: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(alpha (B,), computed (B,) bool): ordinal alpha of the two-column table whose first
    column is ``first`` (B, n) and whose second value of item i is ``levels[b, level[i]]``,
    item i counting ``weights[b, i]`` times (0: not in the resample, or a value missing).

    ``levels`` (B, G): each resample's second-column levels in increasing order (the caller's
    promise); ``below_hint`` (B, n): an estimate, within one, of the number of levels below
    each first value (the caller's search in its own units, :func:`.alpha_batch.unsorted` from
    the sorted first values); ``first_ranks``:
    :func:`own_ranks` of ``first`` with ``weights``. Alpha is NaN where undefined, as in
    :func:`.alpha_batch.weighted_alphas`; where ``computed`` is False the caller must compute
    the pooled ranks itself (a near-tie across the columns, a step between levels at the
    tolerance, a value not finite, or a hint off by more than one)."""
    b, g = levels.shape
    active = weights > 0
    level_w = _row_sums((np.arange(b) * g)[:, None] + level[None, :], weights, b, g)
    held = level_w > 0
    level_scale = np.where(held, np.abs(levels), 0.0).max(axis=1, initial=0.0)
    tol = TIE_TOLERANCE * np.maximum(first_ranks.scale, level_scale)
    ok = first_ranks.finite & np.isfinite(np.where(held, levels, 0.0)).all(axis=1)
    ok &= first_ranks.gap > tol  # no step between first values is a pooled tie
    # no two levels within the tolerance (held or not: a tie between held levels would show
    # between two neighbours in any case)
    with np.errstate(invalid="ignore"):
        ok &= ~(np.diff(levels, axis=1) <= tol[:, None]).any(axis=1)

    # padded[j + 2] is level j, two -inf before and two +inf after: k levels lie below c
    # where padded[k + 1] < c <= padded[k + 2]. Four neighbours of the hint h settle k in
    # {h - 1, h, h + 1} and give c's neighbouring levels, for the near-tie check, at once.
    width = g + 4
    row_start = (np.arange(b) * width)[:, None]
    padded = np.empty((b, width))
    padded[:, :2] = -np.inf
    padded[:, 2:-2] = levels
    padded[:, -2:] = np.inf
    at = np.clip(below_hint, 0, g) + row_start
    p0, p1, p2, p3 = (np.take(padded, at + i) for i in range(4))
    lower = p1 >= first  # fewer than h levels below
    upper = p2 < first  # more than h
    settled = ~(lower & upper) & ~(lower & (p0 >= first)) & ~(upper & (p3 < first))
    below_level = np.where(lower, p0, np.where(upper, p2, p1))
    above_level = np.where(lower, p1, np.where(upper, p3, p2))
    near = (first - below_level <= tol[:, None]) | (above_level - first <= tol[:, None])
    ok &= ~(active & (near | ~settled)).any(axis=1)
    below = at - row_start - lower + upper  # levels below each first value

    # pooled mid-ranks: own rank plus the other column's weight below
    level_before = np.zeros((b, g + 1))
    np.cumsum(level_w, axis=1, out=level_before[:, 1:])
    below = np.where(active & settled, below, 0) + (np.arange(b) * (g + 1))[:, None]
    r_first = first_ranks.ranks + np.take(level_before, below)
    first_below_level = np.cumsum(_row_sums(below, weights, b, g + 1), axis=1)[:, :g]
    r_level = level_before[:, 1:] - level_w / 2.0 + first_below_level
    d = r_first - r_level[:, level]
    within = (weights * d * d).sum(axis=1)
    # the pooled tie groups are the first column's and the levels': for mid-ranks centred on
    # n / 2, sum w (r - n/2)^2 = (n^3 - sum_groups t^3) / 12 and sum w r^2 = that + n^3 / 4,
    # both exact (quarters far below 2^53), so equal to the per-value sums bit for bit
    n = 2.0 * weights.sum(axis=1)
    cubes = first_ranks.tie_cubes + (level_w * level_w * level_w).sum(axis=1)
    ss_tot = (n * n * n - cubes) / 12.0
    scale = ss_tot + n * n * n / 4.0
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - (n - 1.0) * within / (n * ss_tot)
    defined = (n >= 2) & (ss_tot > 1e-12 * scale) & (ss_tot > 0)
    return np.where(defined, alpha, np.nan), ok


def _row_sums(bins: np.ndarray, weights: np.ndarray, b: int, width: int) -> np.ndarray:
    """(b, width): per resample, the weights summed by bin (``bins`` already offset by the
    resample's row, so one bincount serves them all; whole numbers, exact in any order)."""
    return np.bincount(bins.ravel(), weights=weights.ravel(), minlength=b * width).reshape(b, width)
