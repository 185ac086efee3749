"""Krippendorff's alpha (interval and ordinal) for many item resamples at once.

A resample is a row of unit (item) weights: a unit drawn w times counts as w copies of itself,
so its ratings count w times in the value frequencies and its within-unit sum of squares w
times. The closed forms of :mod:`.alpha` then need only per-unit sums, one sparse product
per resample chunk; ordinal alpha is interval alpha on the weighted mid-ranks of the pairable
values, whose order may change from one resample to the next (the values are recomputed in
each), so they are ranked per row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: Values closer than this, relative to the largest |value| of a resample, are one value
#: (values equal in exact arithmetic can differ in the last bits after z-scoring).
TIE_TOLERANCE = 1e-10


@dataclass(frozen=True)
class EqualValues:
    """Columns of a values array that hold equal values in every row wherever they have
    weight (one rater's equal composites, z-scored by one mean and SD per row): ranked once
    per group."""

    codes: np.ndarray  # (N,) each column's group
    order: np.ndarray  # (N,) the columns sorted by group
    starts: np.ndarray  # (G,) where each group begins in ``order``


def equal_values(keys: np.ndarray) -> EqualValues:
    """The groups of columns whose rows of ``keys`` (N, k) are equal: the caller's word that
    such columns hold equal values (the same inputs to the same arithmetic) in every row."""
    # each row's bytes numbered by a dict, not np.unique(axis=0): that sorts the rows as
    # records, compared in Python's thread with the GIL held (a fifth of the GIL's time with two
    # rows of a report computed side by side); + 0.0 makes -0.0 the bytes of 0.0
    rows = np.ascontiguousarray(keys + 0.0)
    as_bytes = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    numbers: dict[bytes, int] = {}
    codes = np.fromiter(
        (numbers.setdefault(row, len(numbers)) for row in map(bytes, as_bytes)),
        dtype=np.intp,
        count=as_bytes.size,
    )
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(int(codes.max(initial=-1)) + 1))
    return EqualValues(codes=codes, order=order, starts=starts)


def weighted_midranks(
    values: np.ndarray, weights: np.ndarray, groups: EqualValues | None = None
) -> np.ndarray:
    """Per row, the mid-rank r_c = sum_{g<c} n_g + n_c / 2 of each value, with n_g the total
    weight of the values tied with g; values of weight 0 take no part (their rank is 0).

    With ``groups`` (columns equal in every row) each group is ranked once, with its total
    weight: the same ranks (a group's values are tied in any case, and the weights are whole
    numbers, summed exactly in any order), from a sort of the groups instead of the values.
    Used where the groups are at most half the values: gathering and reducing the values by
    group costs about what it saves in sorting when nearly every value is its own group
    (a continuous metric's z-scores: slower than the plain sort, bench/README.md, issue 32)."""
    if groups is not None and 0 < groups.starts.size <= values.shape[1] // 2:
        total = np.add.reduceat(weights[:, groups.order], groups.starts, axis=1)
        # a group's value: that of its columns with weight (equal), -inf where none has any
        held = np.where(weights > 0, values, -np.inf)[:, groups.order]
        ranks = weighted_midranks(np.maximum.reduceat(held, groups.starts, axis=1), total)
        return np.where(weights > 0, ranks[:, groups.codes], 0.0)
    sv, sw, positions, scale = sorted_rows(values, weights)
    mid, _, _ = sorted_midranks(sv, sw, TIE_TOLERANCE * scale)
    return np.where(weights > 0, unsorted(mid, positions), 0.0)


def sorted_rows(
    values: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each row of ``values`` (B, n) sorted, values of weight 0 as +inf at the end: (sorted
    values, their weights (0 where inactive), where each sorted value sits in the flattened
    input, the largest finite |value| with weight per row (0 if none))."""
    b, n = values.shape
    active = weights > 0
    key = np.where(active, values, np.inf)
    # numpy's default sort (SIMD where the CPU has it), not a stable one: values equal to the
    # last bit fall in one tie group, and a group's mid-rank reads only the total weight before
    # it and in it (sums of whole-number weights, exact in any order), so the order within a
    # group changes no rank
    positions = np.argsort(key, axis=1) + (np.arange(b) * n)[:, None]
    sv = np.take(key, positions)
    sw = np.take(np.where(active, weights, 0.0), positions)
    scale = np.where(np.isfinite(sv), np.abs(sv), 0.0).max(axis=1, initial=0.0)
    return sv, sw, positions, scale


def unsorted(in_sorted_order: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Values given per sorted value (B, n) put back where :func:`sorted_rows` found them."""
    out = np.empty_like(in_sorted_order)
    out.ravel()[positions.ravel()] = in_sorted_order.ravel()
    return out


def sorted_midranks(
    sv: np.ndarray, sw: np.ndarray, tol: np.ndarray, *, with_gap: bool = False
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(mid-ranks (B, n), gap (B,)) of values sorted along each row ``sv`` (inactive ones
    +inf, at the end) with weights ``sw`` (0 where inactive): neighbours at most ``tol`` (B,)
    apart are tied (in a chain), and a tie group's mid-rank is the mean of the cumulative
    weight before its first value and after its last. ``gap``: the smallest step between
    finite neighbours that is not a tie (inf if none), and ``cubes`` (B,): the sum over tie
    groups of the group's weight cubed (exact: whole numbers), both with ``with_gap`` only."""
    b, n = sv.shape
    cum = np.cumsum(sw, axis=1)
    with np.errstate(invalid="ignore"):
        step = np.diff(sv, axis=1)
        tied = step <= tol[:, None]  # inf - inf is NaN: not tied (both inactive)
    new = np.ones((b, n), dtype=bool)
    new[:, 1:] = ~tied
    last = np.ones((b, n), dtype=bool)
    last[:, :-1] = ~tied
    # Tie groups in row-major order
    group = np.cumsum(new.ravel()) - 1
    before, after = (cum - sw)[new], cum[last]
    mid = (before + after) / 2.0
    gap = cubes = None
    if with_gap:
        gap = np.where(~tied & np.isfinite(step), step, np.inf).min(axis=1, initial=np.inf)
        size = after - before
        cubes = np.bincount(np.flatnonzero(new) // n, weights=size * size * size, minlength=b)
    return mid[group].reshape(b, n), gap, cubes


def weighted_alphas(
    values: np.ndarray,
    valid: np.ndarray,
    unit: np.ndarray,
    unit_weights: np.ndarray,
    *,
    levels: tuple[str, ...] = ("interval", "ordinal"),
    groups: EqualValues | None = None,
) -> dict[str, np.ndarray]:
    """Alpha per resample (B,) at each of ``levels`` ("interval", "ordinal") from ``values``
    (B, N), which of them are present ``valid`` (B, N), each value's unit ``unit`` (N,),
    sorted, in [0, U), and the units' weights (B, U); ``groups``: columns of ``values``
    equal in every row, ranked together for the ordinal level (:func:`weighted_midranks`).

    A unit is pairable in a resample when it has >= 2 present values and a positive weight.
    NaN where fewer than 2 pairable values or no variation (D_e = 0)."""
    for level in levels:
        if level not in ("interval", "ordinal"):
            raise ValueError(f"level must be 'interval' or 'ordinal', got {level!r}")
    unit = np.asarray(unit)
    if unit.size and np.any(np.diff(unit) < 0):
        raise ValueError("values must be ordered by unit")
    values = np.asarray(values, dtype=np.float64)
    n_units = unit_weights.shape[1]
    starts = np.searchsorted(unit, np.arange(n_units))
    filled = starts < unit.size
    has = np.zeros(n_units, dtype=bool)
    has[unit] = True

    counts = np.bincount(unit, minlength=n_units)
    regular = unit.size > 0 and bool(np.all(counts == counts[0]))

    def per_unit(x: np.ndarray) -> np.ndarray:
        if regular:  # every unit has the same number of values: a reshape, no index
            return x.reshape(x.shape[0], n_units, int(counts[0])).sum(axis=2)
        out = np.zeros((x.shape[0], n_units))
        if unit.size:
            sums = np.add.reduceat(x, starts[filled], axis=1)
            out[:, filled] = sums
        out[:, ~has] = 0.0  # reduceat gives a unit with no value its neighbour's entry
        return out

    m = per_unit(valid.astype(np.float64))
    w = np.where(m >= 2, unit_weights, 0.0)
    wv = w[:, unit] * valid  # each pairable value's weight
    n = wv.sum(axis=1)
    out = {}
    for level in levels:
        if level == "ordinal":
            out[level] = _ordinal_alpha(weighted_midranks(values, wv, groups), w, m, n, per_unit)
        else:
            out[level] = _alpha(np.where(wv > 0, values, 0.0), wv, w, m, n, per_unit)
    return out


def _alpha(
    x: np.ndarray,
    wv: np.ndarray,
    w: np.ndarray,
    m: np.ndarray,
    n: np.ndarray,
    per_unit: Callable[[np.ndarray], np.ndarray],
) -> np.ndarray:
    scale = (wv * x * x).sum(axis=1)  # before centring: what "no variation" is relative to
    with np.errstate(divide="ignore", invalid="ignore"):
        # Centre on the pooled mean first: the sums of squares below lose no precision.
        x = np.where(wv > 0, x - ((wv * x).sum(axis=1) / n)[:, None], 0.0)
        s1, s2 = per_unit(x), per_unit(x * x)
        ss_tot = (w * s2).sum(axis=1)  # the pooled mean is 0 after centring
        within_u = np.where(m >= 2, (s2 - s1 * s1 / m) * m / (m - 1), 0.0)
        within = (w * within_u).sum(axis=1)
        alpha = 1.0 - (n - 1.0) * within / (n * ss_tot)
    defined = (n >= 2) & (ss_tot > 1e-12 * scale) & (ss_tot > 0)
    return np.where(defined, alpha, np.nan)


def _ordinal_alpha(
    ranks: np.ndarray,
    w: np.ndarray,
    m: np.ndarray,
    n: np.ndarray,
    per_unit: Callable[[np.ndarray], np.ndarray],
) -> np.ndarray:
    """:func:`_alpha` of mid-ranks from per-unit sums alone: ranks and whole-number weights
    make every sum below exact (halves and quarters far below 2^53), so centring the per-unit
    sums on the pooled mean n / 2 gives the very numbers :func:`_alpha` sums from each
    centred value, at the cost of the units (B, U) rather than the values (B, N)."""
    s1, s2 = per_unit(ranks), per_unit(ranks * ranks)
    scale = (w * s2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = ((w * s1).sum(axis=1) / n)[:, None]
        # only the values of pairable units with weight are centred (the others are 0)
        held = (w > 0) & (m >= 2)
        c1 = np.where(held, s1 - m * mean, 0.0)
        c2 = np.where(held, s2 - 2.0 * mean * s1 + m * mean * mean, 0.0)
        ss_tot = (w * c2).sum(axis=1)
        within_u = np.where(m >= 2, (c2 - c1 * c1 / m) * m / (m - 1), 0.0)
        within = (w * within_u).sum(axis=1)
        alpha = 1.0 - (n - 1.0) * within / (n * ss_tot)
    defined = (n >= 2) & (ss_tot > 1e-12 * scale) & (ss_tot > 0)
    return np.where(defined, alpha, np.nan)


def weighted_alpha(
    values: np.ndarray,
    valid: np.ndarray,
    unit: np.ndarray,
    unit_weights: np.ndarray,
    *,
    level: str = "interval",
) -> np.ndarray:
    """:func:`weighted_alphas` at one level."""
    return weighted_alphas(values, valid, unit, unit_weights, levels=(level,))[level]
