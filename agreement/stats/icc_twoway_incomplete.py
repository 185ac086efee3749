"""Consistency ICC(C,k) on an incomplete design (each item rated by some of many raters) from
the two-way model with the rater offsets fitted jointly with the items:

    x_ij = mu_j + a_i + e_ij,   a_i ~ N(0, s2_item),  e_ij ~ N(0, s2_e),

raters fixed (their offsets mu_j are estimated, which is what makes it a consistency form),
items random. The estimand is ICC(C,k) = s2_item / (s2_item + s2_e / k) = k L / (1 + k L) with
L = s2_item / s2_e: on a complete design it is McGraw & Wong's ICC(C,k) (Shrout & Fleiss'
ICC(3,k)), and the estimate and interval below equal theirs there.

Estimate: Henderson's method III (fitting constants; Henderson 1953, Biometrics 9, 226-252;
Searle, Casella & McCulloch 1992, Variance Components, ch. 5). With X the rater indicators and
Z the item indicators, SSE is the residual sum of squares of x on [X Z] with df_e = N - rank,
and R = x'(P_[XZ] - P_X)x the sum of squares for items adjusted for raters, of rank r = rank(C)
where C = Z'(I - P_X)Z = diag(n_i) - M diag(1/N_j) M' (M the items x raters 0/1 matrix):
s2_e = SSE / df_e and s2_item = (R - r s2_e) / tr(C), tr(C) = N - (raters).

Interval: Wald's exact interval for the variance ratio (Wald 1940, Ann. Math. Stat. 11,
96-100; Harville & Fenech 1985, Biometrics 41, 137-152). In the eigenbasis of C (eigenvalues
d_m > 0, m = 1..r), R splits into independent w_m ~ (s2_e + s2_item d_m) chi2_1, independent
of SSE ~ s2_e chi2_df_e, so

    Q(L) = [sum_m w_m / (1 + L d_m) / r] / [SSE / df_e]  ~  F(r, df_e)  at the true L,

decreasing in L: the L where Q equals the F quantiles bound L, mapped to ICC(C,k) (increasing
in L). Exact under the normal model at any number of items, whatever the design, because the
rater offsets are fitted, not estimated item by item: no within-rater standardisation over a
handful of items biases it (the one-way form on z-scores does, :mod:`.medhelm.oneway`). C's
spectrum is found in rater space (:mod:`.twoway_spectrum`), not from the items x items matrix.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np
from scipy import optimize, sparse, stats
from scipy.sparse.csgraph import connected_components
from threadpoolctl import ThreadpoolController

from .shared import fingerprint, remembered
from .twoway_spectrum import design_spectrum

#: The BLAS thread pools, limited to one thread around the batches of small (raters x raters)
#: decompositions and the design's spectrum: OpenBLAS's threads on a batch of 29 x 29 eigenproblems cost 30 times the CPU
#: of one thread (bench/README.md, issue 32).
_BLAS = ThreadpoolController()


@dataclass(frozen=True)
class TwoWayConsistency:
    """ICC(C,k) of the two-way model with fitted rater offsets, with Wald's exact interval."""

    icc: float  # ICC(C,k) for the stated k
    ci_low: float
    ci_high: float
    k: float
    icc_single: float  # ICC(C,1)
    s2_item: float
    s2_error: float
    ss_items: float  # R: items adjusted for raters
    sse: float
    df_items: int  # r = rank(C)
    df_error: int
    n_items: int
    n_raters: int
    n_ratings: int
    confidence: float


@dataclass(frozen=True)
class _Fit:
    d: np.ndarray  # (g,) positive eigenvalues of C (a repeated one once, with its count)
    count: np.ndarray  # (g,) eigenvectors per eigenvalue
    w: np.ndarray  # (g,) the items sum of squares split along them
    sse: float
    df_error: int
    trace_c: float

    @property
    def rank(self) -> int:
        return int(self.count.sum())


def _fit(x: np.ndarray) -> _Fit:
    rated = ~np.isnan(x)
    m = rated.astype(np.float64)
    y = np.where(rated, x, 0.0)
    n_j = m.sum(axis=0)
    if (n_j == 0).any():
        raise ValueError("every rater (column) must rate at least one item")
    if (m.sum(axis=1) == 0).any():
        raise ValueError("every item (row) must be rated at least once")
    rater_mean = y.sum(axis=0) / n_j
    c_vec = y.sum(axis=1) - m @ rater_mean
    with _BLAS.limit(limits=1, user_api="blas"):  # small (items x raters) decompositions
        spectrum = design_spectrum(m)
    w = spectrum.split(c_vec)
    total = float((((y - rater_mean) * m) ** 2).sum())  # x'(I - P_X)x
    df_error = int(m.sum()) - x.shape[1] - spectrum.rank
    return _Fit(
        d=spectrum.d,
        count=spectrum.count,
        w=w,
        sse=total - float(w.sum()),
        df_error=df_error,
        trace_c=spectrum.trace,
    )


def _icc_k(lam: float, k: float) -> float:
    return k * lam / (1.0 + k * lam) if 1.0 + k * lam > 0 else -np.inf


def _ratio_bound(fit: _Fit, f_target: float) -> float:
    """The L where Q(L) = f_target (Q decreases from +inf at -1/max d to 0 at +inf)."""
    r, mse = fit.rank, fit.sse / fit.df_error

    def g(lam: float) -> float:
        return float((fit.w / (1.0 + lam * fit.d)).sum() / r / mse) - f_target

    low = -1.0 / float(fit.d.max()) * (1.0 - 1e-12)
    if g(low) <= 0:  # Q stays below the target even at the boundary (cannot happen, Q -> inf)
        return low
    high = 1.0
    while g(high) > 0:
        high *= 10.0
        if high > 1e15:
            return np.inf
    return float(optimize.brentq(g, low, high, xtol=1e-14, rtol=1e-12, maxiter=500))


def icc_consistency_incomplete(
    x: np.ndarray, *, k: float = 2.0, confidence: float = 0.95
) -> TwoWayConsistency:
    """ICC(C,k) of the (items, raters) matrix ``x`` (NaN = not rated) with Wald's interval."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"ratings must be an (items, raters) matrix, got shape {x.shape}")
    fit = _fit(x)
    r = fit.rank
    if r < 1 or fit.df_error < 1:
        raise ValueError(
            f"the two-way model leaves {r} degrees of freedom for items and {fit.df_error} "
            "for error: need items rated by 2 or more raters who also rate other items"
        )
    s2_e = fit.sse / fit.df_error
    s2_item = (float(fit.w.sum()) - r * s2_e) / fit.trace_c
    lam = s2_item / s2_e if s2_e > 0 else np.nan
    alpha = 1.0 - confidence
    if s2_e > 0:
        f_hi = float(stats.f.ppf(1.0 - alpha / 2.0, r, fit.df_error))
        f_lo = float(stats.f.ppf(alpha / 2.0, r, fit.df_error))
        lo, hi = _icc_k(_ratio_bound(fit, f_hi), k), _icc_k(_ratio_bound(fit, f_lo), k)
        hi = 1.0 if np.isinf(hi) else hi
    else:  # no variation left within items: no interval
        lo = hi = np.nan
    return TwoWayConsistency(
        icc=_icc_k(lam, k) if np.isfinite(lam) else np.nan,
        ci_low=lo,
        ci_high=hi,
        k=k,
        icc_single=_icc_k(lam, 1.0) if np.isfinite(lam) else np.nan,
        s2_item=s2_item,
        s2_error=s2_e,
        ss_items=float(fit.w.sum()),
        sse=fit.sse,
        df_items=r,
        df_error=fit.df_error,
        n_items=x.shape[0],
        n_raters=x.shape[1],
        n_ratings=int((~np.isnan(x)).sum()),
        confidence=confidence,
    )


@dataclass(frozen=True)
class WeightedFit:
    """The two-way fit of :func:`fit_from_weights`, one value per resample."""

    s2_item: np.ndarray  # (B,) Henderson III item variance
    s2_error: np.ndarray  # (B,)
    offsets: np.ndarray  # (B, R) rater offsets (least squares, items as fixed effects)
    valid: np.ndarray  # (B,) bool: error and item degrees of freedom left, s2_error > 0
    n_sets: np.ndarray  # (B,) connected sets of raters (linked by shared items)
    rater_set: np.ndarray  # (B, R) each rater's connected set, named by its lowest rater index
    df_error: np.ndarray  # (B,)
    df_items: np.ndarray  # (B,)


def rater_sets(linked: np.ndarray) -> np.ndarray:
    """Each rater's connected set per resample (B, R), named by the set's lowest rater index,
    from ``linked`` (B, R, R): whether two raters share an item the resample drew. The
    resamples' graphs are searched side by side, in one call."""
    b, r = linked.shape[0], linked.shape[1]
    if b * r == 0:
        return np.zeros((b, r), dtype=np.int64)
    block, i, j = np.nonzero(linked)
    graph = sparse.csr_matrix(
        (np.ones(block.size, dtype=np.int8), (block * r + i, block * r + j)), shape=(b * r, b * r)
    )
    _, labels = connected_components(graph, directed=False)
    lowest = np.full(int(labels.max()) + 1, r)
    np.minimum.at(lowest, labels, np.tile(np.arange(r), b))
    return lowest[labels].reshape(b, r)


#: An error sum of squares at most this fraction of the within-item sum is rounding: zero.
EXACT_FIT = 1e-12


def fit_from_weights(x: np.ndarray, weights: np.ndarray) -> WeightedFit:
    """The Henderson III fit of :func:`icc_consistency_incomplete` for item multiplicities
    ``weights`` (B, n) (an item drawn twice counts as two items; an item nobody rated counts
    for nothing), for the item bootstrap; computed in rater space (items absorbed: an R x R
    system per resample). The offsets solve the absorbed normal equations L mu = q with the
    minimum-norm solution (sum zero over a connected set of raters; a rater not drawn gets
    0): only differences between raters who share items are identified, and those are what
    an item's offset-adjusted mean uses."""
    x = np.asarray(x, dtype=np.float64)
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    rated = ~np.isnan(x)
    m = rated.astype(np.float64)
    y = np.where(rated, x, 0.0)
    n_i = m.sum(axis=1)
    n_safe = np.where(n_i > 0, n_i, 1.0)  # an item nobody rated adds nothing
    dev = np.where(rated, y - (y.sum(axis=1) / n_safe)[:, None], 0.0)  # x_ij - item mean
    n_j = w @ m  # (B, R) ratings per rater
    active = n_j > 0
    big_n = w @ n_i
    n_items = w @ (n_i > 0)
    # items absorbed: L = diag(N_j) - sum_i w_i m_i m_i' / n_i, q = sum_i w_i m_i dev_i
    r_count = x.shape[1]
    # sparse: an item links only its own raters (the rank no longer reads L's null eigenvalue,
    # which a product in another summation order moved)
    outer = remembered(
        "rater_pairs",
        fingerprint(m),
        operator.eq,
        lambda: sparse.csr_matrix((m[:, :, None] * m[:, None, :]).reshape(len(n_i), r_count**2)),
        kept=8,
    )
    lap = -np.asarray((outer.T @ (w / n_safe).T).T).reshape(-1, r_count, r_count)
    idx = np.arange(r_count)
    lap[:, idx, idx] += n_j
    q = w @ dev
    within = w @ (dev**2).sum(axis=1)  # x'(I - P_Z)x
    with _BLAS.limit(limits=1, user_api="blas"):
        pinv = np.linalg.pinv(lap, rcond=1e-10, hermitian=True)
    offsets = np.einsum("bjk,bk->bj", pinv, q)
    sse = within - np.einsum("bj,bj->b", q, offsets)
    # An exact fit leaves an error sum of squares at rounding level of the within-item sum it
    # is subtracted from, positive on one CPU and negative on another (a resample of 10 items
    # in the pinned report cells: tiny and positive where they were made, -5.9e-16 on an AMD
    # EPYC): no error left, so such a resample is invalid on every machine.
    sse = np.where(sse > EXACT_FIT * within, sse, 0.0)
    raters = active.sum(axis=1)
    # L is the Laplacian of the raters' graph (edge weights sum_i w_i m_ij m_ik / n_i, a
    # rater not drawn alone): its rank is the drawn raters less their connected sets, counted
    # from the design. Read from L's eigenvalues it was wrong at rounding level (the null
    # eigenvalue against numpy's default tolerance) in some resamples of complete designs.
    # An off-diagonal entry is a sum of non-negative terms: below 0 exactly where linked.
    sets = rater_sets(lap < 0)
    n_sets = ((sets == idx) & active).sum(axis=1)
    rank_l = raters - n_sets
    df_error = big_n - n_items - rank_l
    df_items = n_items - raters + rank_l
    sum_j = w @ y
    total = w @ (y**2).sum(axis=1) - np.where(active, sum_j**2 / np.where(active, n_j, 1.0), 0).sum(
        axis=1
    )
    ss_items = total - sse
    with np.errstate(divide="ignore", invalid="ignore"):
        s2_e = sse / df_error
        s2_item = (ss_items - df_items * s2_e) / (big_n - raters)
    return WeightedFit(
        s2_item=s2_item,
        s2_error=s2_e,
        offsets=offsets,
        valid=(df_error >= 1) & (df_items >= 1) & (s2_e > 0),
        n_sets=n_sets,
        rater_set=sets,
        df_error=df_error,
        df_items=df_items,
    )


def icc_consistency_from_weights(
    x: np.ndarray, weights: np.ndarray, *, k: float = 2.0
) -> np.ndarray:
    """The Henderson III ICC(C,k) of :func:`icc_consistency_incomplete` for item
    multiplicities ``weights`` (B, n) (:func:`fit_from_weights`). NaN where a resample leaves
    no error or item degrees of freedom."""
    fit = fit_from_weights(x, weights)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = fit.s2_item / (fit.s2_item + fit.s2_error / k)
    return np.where(fit.valid, out, np.nan)
