"""The jackknife behind BCa's acceleration (:mod:`.bootstrap`): which items each jackknife value
leaves out, as item weights. One item at a time up to :data:`JACKKNIFE_GROUPS` items, one
random group of items at a time above."""

from __future__ import annotations

import operator

import numpy as np

from .shared import remembered

#: Above this many items BCa's acceleration comes from a jackknife that leaves out one of this
#: many random groups of items at a time (the grouped jackknife; Efron & Tibshirani 1993, ch. 11),
#: not one item at a time: the leave-one-out jackknife costs n evaluations over n items, so it
#: grows with the square of the items (3/4 of a 3,000-item report's work, 100x at 30,000
#: items). The acceleration a = sum(u^3) / (6 (sum u^2)^1.5) does not depend on the scale of
#: the influences u, and a group's influence is the sum of its items', so the groups estimate
#: the same a, with a larger error (lognormal samples of 3,000 items: within 0.0025 of the
#: leave-one-out a of 0.011-0.020, tests/agreement/stats/test_jackknife_groups.py), which moves
#: a 95% interval's levels by about 0.22 x that: far less than the Monte Carlo error of the
#: quantiles themselves (bench/bench_jackknife_groups.py measures both on report-like data).
#: Up to this many items nothing changes: the jackknife leaves out one item at a time.
JACKKNIFE_GROUPS: int = 500
#: The groups are a computing device, not part of the resampling: they come from a stream of
#: their own, so that a report's intervals depend on its data and seed only.
_GROUPING_SEED: int = 20261207


def jackknife_groups(n_items: int, max_groups: int | None = None) -> np.ndarray | None:
    """Each item's jackknife group (0 .. max_groups - 1, sizes differing by at most one, items
    assigned at random), or None where the jackknife leaves out one item at a time
    (``n_items <= max_groups``; by default JACKKNIFE_GROUPS, read when called)."""
    if max_groups is None:
        max_groups = JACKKNIFE_GROUPS
    if n_items <= max_groups:
        return None
    order = np.random.default_rng(_GROUPING_SEED).permutation(n_items)
    groups = np.empty(n_items, dtype=np.intp)
    groups[order] = np.arange(n_items) % max_groups
    return groups


def jackknife_units(n_items: int, groups: np.ndarray | None) -> int:
    """How many values the jackknife gives: one per item, or one per group."""
    return n_items if groups is None else int(groups.max()) + 1


def deletion_weights(n_items: int, groups: np.ndarray | None, start: int, stop: int) -> np.ndarray:
    """Weights (stop - start, n_items) of jackknife values start .. stop - 1: 1 on every item
    but the left-out one (or the left-out group's)."""
    if groups is None:
        w = np.ones((stop - start, n_items))
        w[np.arange(stop - start), np.arange(start, stop)] = 0.0
        return w
    return (groups[None, :] != np.arange(start, stop)[:, None]).astype(np.float64)


def jackknife_chunks(n: int, groups: np.ndarray | None, step: int) -> list[tuple[int, np.ndarray]]:
    """The deletion weights in chunks of ``step`` rows, with where each chunk starts. Inside
    :func:`agreement.stats.shared.shared_work` they are made once for every cell of a row
    over the same items, so that what a statistic keeps per weights array is found again by
    identity, as for the resamples (at most JACKKNIFE_GROUPS rows: 12 MB at 3,000 items)."""
    units = jackknife_units(n, groups)

    def make() -> list[tuple[int, np.ndarray]]:
        return [
            (start, deletion_weights(n, groups, start, min(units, start + step)))
            for start in range(0, units, step)
        ]

    key = (n, step, None if groups is None else groups.tobytes())
    return remembered("jackknife chunks", key, operator.eq, make, kept=2)
