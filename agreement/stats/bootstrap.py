"""Bootstrap confidence intervals by resampling items: percentile and BCa with jackknife
acceleration (Efron & Tibshirani 1993, ch. 13-14; eq. 15.36 for a difference). The resampling
stream, bias correction and quantile rule are scipy.stats.bootstrap's, so with the same
Generator the intervals equal scipy's (a test checks this).

A statistic is an :class:`ItemStatistic` recomputed from item multiplicities ``weights``
(B, n_items): every resample is one matrix product over per-item moments, not a Python loop;
the jackknife uses weights ``1 - e_i`` (above :data:`JACKKNIFE_GROUPS` items, 1 on every item
but one random group's), and two statistics on the same weights give the paired difference.
"""

from __future__ import annotations

import operator
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtr, ndtri

from .common import as_generator, recorded_seed
from .jackknife import jackknife_chunks, jackknife_groups, jackknife_units
from .shared import remembered

#: Default cap on the number of (resample, item) cells materialised at once: a chunk's
#: (resamples, values) arrays stay near the CPU's caches and are not page-faulted in afresh
#: for every temporary (an ordinal alpha's jackknife over 3,000 items: 6.5 s at 1 << 22, 4 s
#: at 1 << 20; with the paired ranks 1.2 s at 1 << 18 and 0.86 s at 1 << 16; bench/README.md,
#: issue 32).
DEFAULT_MAX_CELLS: int = 1 << 16


class ItemStatistic(ABC):
    """A statistic over a fixed, ordered universe of items, evaluable for item weights."""

    #: Human-readable name used in reports, e.g. "ICC(A,1)".
    name: str = "statistic"

    def __init__(self, items: Sequence[object] | pd.Index) -> None:
        self.items = pd.Index(items)
        if self.items.has_duplicates:
            raise ValueError("item labels must be unique")

    @property
    def n_items(self) -> int:
        """Number of items in the universe (columns of the weights matrix)."""
        return len(self.items)

    @abstractmethod
    def from_weights(self, weights: np.ndarray) -> np.ndarray:
        """Statistic for each row of ``weights`` (B, n_items) -> (B,); NaN when undefined."""

    def estimate(self) -> float:
        """The statistic on the observed data (every item once)."""
        return float(self.from_weights(np.ones((1, self.n_items)))[0])

    def jackknife(
        self, *, max_cells: int = DEFAULT_MAX_CELLS, groups: np.ndarray | None = None
    ) -> np.ndarray:
        """Leave-one-item-out values (n_items,), computed with weights 1 - e_i in chunks; with
        ``groups`` (:func:`jackknife_groups`), leave-one-group-out values (one per group).

        Subclasses whose statistic is a function of linear item moments override this with an
        O(n) version.
        """
        n = self.n_items
        out = np.empty(jackknife_units(n, groups))
        step = max(1, max_cells // max(n, 1))
        for start, w in jackknife_chunks(n, groups, step):
            out[start : start + w.shape[0]] = self.from_weights(w)
        return out


class DifferenceStatistic(ItemStatistic):
    """``first - second`` evaluated on the same items and the same resamples (paired)."""

    def __init__(self, first: ItemStatistic, second: ItemStatistic) -> None:
        if not first.items.equals(second.items):
            raise ValueError(
                "the two statistics must share one item universe in the same order to be "
                f"resampled together ({first.n_items} vs {second.n_items} items)"
            )
        super().__init__(first.items)
        self.first, self.second = first, second
        self.name = f"{first.name} - {second.name}"

    def from_weights(self, weights: np.ndarray) -> np.ndarray:
        return self.first.from_weights(weights) - self.second.from_weights(weights)

    def estimate(self) -> float:
        return self.first.estimate() - self.second.estimate()

    def jackknife(
        self, *, max_cells: int = DEFAULT_MAX_CELLS, groups: np.ndarray | None = None
    ) -> np.ndarray:
        if _jackknifes_by_weights(self.first) and _jackknifes_by_weights(self.second):
            # both terms read the same leave-one-out weights: one array per chunk lets two
            # statistics of one fit (agreement.stats.medhelm.fitted) share its work
            return super().jackknife(max_cells=max_cells, groups=groups)
        return self.first.jackknife(max_cells=max_cells, groups=groups) - self.second.jackknife(
            max_cells=max_cells, groups=groups
        )


@dataclass(frozen=True)
class BootstrapResult:
    """A bootstrap interval and what is needed to report and reproduce it."""

    statistic: str
    estimate: float
    method: str  # "bca" or "percentile": which interval ci_low/ci_high hold
    confidence: float
    ci_low: float
    ci_high: float
    percentile_ci: tuple[float, float]
    bca_ci: tuple[float, float]  # NaN unless method is "bca" (the jackknife is its cost)
    n_items: int
    n_resamples: int
    n_valid: int  # resamples where the statistic was defined (others are dropped)
    standard_error: float
    bias_correction: float  # z0
    acceleration: float  # a
    jackknife_units: int  # values the acceleration came from: items, or groups of items; 0 without
    seed: int | None
    distribution: np.ndarray = field(repr=False, compare=False)


def resample_weights(rng: np.random.Generator, n_items: int, n_resamples: int) -> np.ndarray:
    """Item multiplicities (n_resamples, n_items) of ``n_resamples`` draws of n items with
    replacement. The indices are ``rng.integers(0, n, size=(n_resamples, n))``, the stream
    ``scipy.stats.bootstrap`` uses; drawing in consecutive chunks gives the same stream."""
    idx = rng.integers(0, n_items, size=(n_resamples, n_items))
    offsets = (np.arange(n_resamples, dtype=np.int64) * n_items)[:, None]
    counts = np.bincount((idx + offsets).ravel(), minlength=n_resamples * n_items)
    return counts.reshape(n_resamples, n_items).astype(np.float64)


def _resample_chunks(
    seed: int | np.integer | np.random.Generator | None, n: int, n_resamples: int, step: int
) -> list[tuple[int, np.ndarray]]:
    """The resample weights in chunks of ``step`` resamples, with where each chunk starts.
    Inside :func:`agreement.stats.shared.shared_work` the chunks of an int seed are drawn once
    for every cell of the same items (the cells of a report's row draw the same resamples
    from the report's seed), and being the same arrays, what is kept per weights array is
    found again by identity. A Generator's stream moves on with each draw: never shared."""

    def draw() -> list[tuple[int, np.ndarray]]:
        rng = as_generator(seed)
        return [
            (start, resample_weights(rng, n, min(n_resamples, start + step) - start))
            for start in range(0, n_resamples, step)
        ]

    record = recorded_seed(seed)
    if record is None:
        return draw()
    return remembered("resamples", (record, n, n_resamples, step), operator.eq, draw, kept=2)


def bootstrap_distribution(
    statistic: ItemStatistic,
    *,
    n_resamples: int = 1000,
    seed: int | np.integer | np.random.Generator | None = None,
    max_cells: int = DEFAULT_MAX_CELLS,
) -> np.ndarray:
    """Values of ``statistic`` on ``n_resamples`` item resamples (NaN where undefined).

    A resample that drew one item n times has no between-item variation: an agreement
    statistic is undefined there, so it is NaN whatever the statistic computes (and so not
    counted in ``n_valid``).

    Resamples are evaluated in chunks of at most ``max_cells`` (resample, item) cells; the
    resamples do not depend on the chunk size (the values only up to BLAS rounding, ~1e-16).
    """
    if n_resamples < 1:
        raise ValueError("n_resamples must be >= 1")
    rng = as_generator(seed)
    n = statistic.n_items
    out = np.empty(n_resamples)
    step = max(1, max_cells // max(n, 1))
    for start in range(0, n_resamples, step):
        stop = min(n_resamples, start + step)
        weights = resample_weights(rng, n, stop - start)
        values = statistic.from_weights(weights)
        out[start:stop] = np.where(np.count_nonzero(weights, axis=1) >= 2, values, np.nan)
    return out


def percentile_interval(distribution: np.ndarray, confidence: float) -> tuple[float, float]:
    """Efron's percentile interval: the (1-c)/2 and (1+c)/2 quantiles (numpy "linear")."""
    theta = distribution[np.isfinite(distribution)]
    if theta.size == 0:
        return (float("nan"), float("nan"))
    a = (1.0 - confidence) / 2
    lo, hi = np.quantile(theta, [a, 1 - a])
    return (float(lo), float(hi))


def bca_levels(z0: float, acceleration: float, confidence: float) -> tuple[float, float]:
    """BCa quantile levels (Efron & Tibshirani 1993, eq. 14.10):
    alpha_j = Phi(z0 + (z0 + z_j) / (1 - a (z0 + z_j))), z_j = Phi^-1((1 -+ c) / 2).
    With z0 = 0 and a = 0 they are the percentile levels (1-c)/2 and (1+c)/2."""
    a = (1.0 - confidence) / 2
    out = []
    for z in (ndtri(a), ndtri(1 - a)):
        num = z0 + z
        out.append(float(ndtr(z0 + num / (1 - acceleration * num))))
    return (out[0], out[1])


def bca_interval(
    distribution: np.ndarray, estimate: float, jackknife: np.ndarray, confidence: float
) -> tuple[tuple[float, float], float, float]:
    """BCa interval, z0 and acceleration.

    z0 = Phi^-1(share of resamples below the estimate, ties counting one half) (eq. 14.14,
    scipy's rule); a = sum(u^3) / (6 (sum u^2)^1.5) with u_i = mean(jack) - jack_i (eq. 14.15).
    Undefined jackknife values are dropped; if every jackknife value is equal, a = 0. If the
    estimate lies outside the bootstrap distribution (z0 infinite) the interval is NaN.
    """
    theta = distribution[np.isfinite(distribution)]
    jk = jackknife[np.isfinite(jackknife)]
    if theta.size == 0 or not np.isfinite(estimate):
        return (float("nan"), float("nan")), float("nan"), float("nan")
    share = (np.count_nonzero(theta < estimate) + np.count_nonzero(theta <= estimate)) / (
        2 * theta.size
    )
    z0 = float(ndtri(share))
    u = jk.mean() - jk if jk.size else np.zeros(1)
    den = float(np.sum(u**2))
    acc = float(np.sum(u**3) / (6.0 * den**1.5)) if den > 0 else 0.0
    if not np.isfinite(z0):
        return (float("nan"), float("nan")), z0, acc
    lo_level, hi_level = bca_levels(z0, acc, confidence)
    lo, hi = np.quantile(theta, [lo_level, hi_level])
    return (float(lo), float(hi)), z0, acc


def _jackknifes_by_weights(statistic: ItemStatistic) -> bool:
    """Whether the statistic's jackknife is its values on the jackknife's weights: the default
    jackknife, or a difference of two such statistics."""
    own = type(statistic).jackknife
    if isinstance(statistic, DifferenceStatistic) and own is DifferenceStatistic.jackknife:
        return _jackknifes_by_weights(statistic.first) and _jackknifes_by_weights(statistic.second)
    return own is ItemStatistic.jackknife


def _jackknives(
    statistics: Sequence[ItemStatistic], *, max_cells: int, groups: np.ndarray | None
) -> list[np.ndarray]:
    """Each statistic's leave-one-item-out (or leave-one-group-out) values; those whose
    jackknife is their values on the jackknife's weights (the default one, and differences of
    such) share one weights array per chunk, so what the statistics share per weights array
    (the clinicians' side of every machine of a row) is computed once per chunk."""
    shared = [s for s in statistics if _jackknifes_by_weights(s)]
    out: dict[int, np.ndarray] = {
        id(s): s.jackknife(max_cells=max_cells, groups=groups)
        for s in statistics
        if s not in shared
    }
    if shared:
        n = statistics[0].n_items
        units = jackknife_units(n, groups)
        for s in shared:
            out[id(s)] = np.empty(units)
        step = max(1, max_cells // max(n, 1))
        for start, w in jackknife_chunks(n, groups, step):
            for s in shared:
                out[id(s)][start : start + w.shape[0]] = s.from_weights(w)
    return [out[id(s)] for s in statistics]


def bootstrap_cis(
    statistics: Sequence[ItemStatistic],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    method: str = "bca",
    seed: int | np.integer | np.random.Generator | None = None,
    max_cells: int = DEFAULT_MAX_CELLS,
) -> list[BootstrapResult]:
    """Bootstrap intervals for several statistics over one item universe, on the *same*
    resamples: each chunk of item weights is drawn once and every statistic evaluated on it.

    With an int seed each result equals :func:`bootstrap_ci` of that statistic alone (the
    stream is the same); drawing once is what lets statistics share work per resample.
    """
    if method not in ("bca", "percentile"):
        raise ValueError(f"method must be 'bca' or 'percentile', got {method!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if not statistics:
        raise ValueError("no statistic to bootstrap")
    first = statistics[0]
    for other in statistics[1:]:
        if not first.items.equals(other.items):
            raise ValueError(
                "statistics bootstrapped together must share one item universe in the same "
                f"order ({first.n_items} vs {other.n_items} items)"
            )
    if first.n_items < 2:
        raise ValueError("need at least 2 items to bootstrap")
    if n_resamples < 1:
        raise ValueError("n_resamples must be >= 1")
    seed_record = recorded_seed(seed)
    estimates = [s.estimate() for s in statistics]
    n = first.n_items
    dists = [np.empty(n_resamples) for _ in statistics]
    step = max(1, max_cells // max(n, 1))
    for start, weights in _resample_chunks(seed, n, n_resamples, step):
        stop = start + weights.shape[0]
        enough = np.count_nonzero(weights, axis=1) >= 2
        for s, dist in zip(statistics, dists, strict=True):
            dist[start:stop] = np.where(enough, s.from_weights(weights), np.nan)
    # the jackknife (every statistic once per item or group left out) serves BCa's
    # acceleration only: a percentile interval does without it
    jackknives: list[np.ndarray | None] = (
        list(_jackknives(statistics, max_cells=max_cells, groups=jackknife_groups(n)))
        if method == "bca"
        else [None] * len(statistics)
    )
    return [
        _result(s, est, dist, jk, confidence=confidence, method=method, seed=seed_record)
        for s, est, dist, jk in zip(statistics, estimates, dists, jackknives, strict=True)
    ]


def bootstrap_named(
    statistics: Mapping[str, ItemStatistic], **arguments: Any
) -> dict[str, BootstrapResult]:
    """:func:`bootstrap_cis` of the statistics of a mapping, its results by the same keys."""
    results = bootstrap_cis(list(statistics.values()), **arguments)
    return dict(zip(statistics, results, strict=True))


def _result(
    statistic: ItemStatistic,
    estimate: float,
    dist: np.ndarray,
    jackknife: np.ndarray | None,
    *,
    confidence: float,
    method: str,
    seed: int | None,
) -> BootstrapResult:
    valid = dist[np.isfinite(dist)]
    perc = percentile_interval(dist, confidence)
    nan = float("nan")
    bca, z0, acc = (
        bca_interval(dist, estimate, jackknife, confidence)
        if jackknife is not None
        else ((nan, nan), nan, nan)
    )
    chosen = bca if method == "bca" else perc
    return BootstrapResult(
        statistic=statistic.name,
        estimate=estimate,
        method=method,
        confidence=confidence,
        ci_low=chosen[0],
        ci_high=chosen[1],
        percentile_ci=perc,
        bca_ci=bca,
        n_items=statistic.n_items,
        n_resamples=int(dist.size),
        n_valid=int(valid.size),
        standard_error=float(valid.std(ddof=1)) if valid.size > 1 else float("nan"),
        bias_correction=z0,
        acceleration=acc,
        jackknife_units=0 if jackknife is None else int(jackknife.size),
        seed=seed,
        distribution=dist,
    )


def bootstrap_ci(
    statistic: ItemStatistic,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    method: str = "bca",
    seed: int | np.integer | np.random.Generator | None = None,
    max_cells: int = DEFAULT_MAX_CELLS,
) -> BootstrapResult:
    """Bootstrap interval for ``statistic`` by resampling items with replacement.

    ``method`` picks the interval reported in ``ci_low``/``ci_high``. The percentile interval
    is always computed; the BCa interval (its bias correction and acceleration, which need
    the jackknife) only for ``method="bca"``, else they are NaN. Resamples where the statistic
    is undefined (NaN, e.g. a degenerate resample) are dropped and counted in ``n_valid``.
    Pass an int seed (recorded in the result) or a numpy Generator.
    """
    return bootstrap_cis(
        [statistic],
        n_resamples=n_resamples,
        confidence=confidence,
        method=method,
        seed=seed,
        max_cells=max_cells,
    )[0]


def bootstrap_difference(
    first: ItemStatistic,
    second: ItemStatistic,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    method: str = "bca",
    seed: int | np.integer | np.random.Generator | None = None,
    max_cells: int = DEFAULT_MAX_CELLS,
) -> BootstrapResult:
    """Interval for ``first - second`` where both are recomputed on the *same* item resamples
    (so the correlation between them is kept), e.g. jury-vs-clinicians ICC minus the
    clinician-clinician ICC."""
    return bootstrap_ci(
        DifferenceStatistic(first, second),
        n_resamples=n_resamples,
        confidence=confidence,
        method=method,
        seed=seed,
        max_cells=max_cells,
    )
