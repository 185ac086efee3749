"""ICC(C,k) of the two-way model with fitted rater offsets on incomplete designs (issue 21):
equal to pingouin's ICC(C,k) (ICC3k) (estimate and F interval, unrounded) on complete designs; on
incomplete designs equal to Henderson's method III computed here from dense least-squares
projections in observation space, with Wald's pivot at the interval's bounds equal to the F
quantiles; the bootstrap form equal to the direct one on items copied by hand."""

from __future__ import annotations

import numpy as np
import pingouin as pg
import pytest
from scipy import stats

from agreement.stats.bootstrap import resample_weights
from agreement.stats.icc_twoway_incomplete import (
    fit_from_weights,
    icc_consistency_from_weights,
    icc_consistency_incomplete,
    rater_sets,
)
from agreement.stats.medhelm import ClinicianTwoWayStatistic, clinician_twoway
from agreement.stats.simulation import Design, score_table, simulate_matrix
from agreement.stats.twoway_spectrum import RANK_TOL, design_spectrum
from tests.support.reference import pingouin_unrounded

from .factories import long_from_matrix


def _matrix(design: Design, seed: int) -> np.ndarray:
    return simulate_matrix(np.random.default_rng(seed), design)[0]


def _mixed_incomplete(seed: int) -> np.ndarray:
    """40 items of 7 raters, 1, 2 or 3 ratings per item (connected through the raters)."""
    rng = np.random.default_rng(seed)
    x = _matrix(Design(40, 7, 7), seed)
    keep = np.zeros(x.shape, dtype=bool)
    for i, per_item in enumerate(rng.choice([1, 2, 2, 3], size=40)):
        keep[i, rng.choice(7, size=per_item, replace=False)] = True
    keep[np.arange(7), np.arange(7)] = keep[np.arange(7), (np.arange(7) + 1) % 7] = True
    return np.where(keep, x, np.nan)


@pytest.mark.parametrize(("n_raters", "seed"), [(2, 1), (3, 2), (5, 3)])
def test_complete_design_equals_pingouin_icc_c_k(n_raters: int, seed: int) -> None:
    x = _matrix(Design(60, n_raters, n_raters), seed)
    ours = icc_consistency_incomplete(x, k=n_raters)
    with pingouin_unrounded():
        ref = pg.intraclass_corr(
            long_from_matrix(x), targets="item", raters="rater", ratings="value"
        ).set_index("Type")
    assert ours.icc == pytest.approx(ref.loc["ICC(C,k)", "ICC"], abs=1e-10)
    lo, hi = ref.loc["ICC(C,k)", "CI95"]
    assert (ours.ci_low, ours.ci_high) == pytest.approx((lo, hi), abs=1e-8)
    assert ours.icc_single == pytest.approx(ref.loc["ICC(C,1)", "ICC"], abs=1e-10)


def _dense_henderson(x: np.ndarray, k: float) -> dict[str, float | np.ndarray]:
    """Henderson III from the N x N projections of the rater and item indicator matrices."""
    ii, jj = np.nonzero(~np.isnan(x))
    y = x[ii, jj]
    big_x = (jj[:, None] == np.arange(x.shape[1])).astype(float)
    big_z = (ii[:, None] == np.arange(x.shape[0])).astype(float)
    both = np.hstack([big_x, big_z])
    p_x = big_x @ np.linalg.pinv(big_x)
    p_xz = both @ np.linalg.pinv(both)
    a = p_xz - p_x
    sse = float(y @ (np.eye(len(y)) - p_xz) @ y)
    df_e = len(y) - np.linalg.matrix_rank(both)
    r = np.linalg.matrix_rank(a)
    tr_c = float(np.trace(big_z.T @ (np.eye(len(y)) - p_x) @ big_z))
    s2_e = sse / df_e
    s2_a = (float(y @ a @ y) - r * s2_e) / tr_c
    # Wald's split: the eigenvectors of A Z Z' A with positive eigenvalues span A's range
    mu, u = np.linalg.eigh(a @ big_z @ big_z.T @ a)
    pos = mu > 1e-9 * mu.max()
    return {
        "icc": s2_a / (s2_a + s2_e / k),
        "mu": mu[pos],
        "w": (u[:, pos].T @ y) ** 2,
        "mse": s2_e,
        "df_e": df_e,
        "r": r,
    }


def _pivot(ref: dict, icc_k: float, k: float) -> float:
    lam = icc_k / (k * (1.0 - icc_k))
    return float((ref["w"] / (1.0 + lam * ref["mu"])).sum() / ref["r"] / ref["mse"])


@pytest.mark.parametrize("seed", [4, 5])
def test_incomplete_design_equals_dense_henderson_and_wald(seed: int) -> None:
    x = _mixed_incomplete(seed)
    ours = icc_consistency_incomplete(x, k=2, confidence=0.9)
    ref = _dense_henderson(x, 2)
    assert ours.icc == pytest.approx(ref["icc"], abs=1e-10)
    assert (ours.df_items, ours.df_error) == (ref["r"], ref["df_e"])
    f_hi = stats.f.ppf(0.95, ref["r"], ref["df_e"])
    f_lo = stats.f.ppf(0.05, ref["r"], ref["df_e"])
    assert _pivot(ref, ours.ci_low, 2) == pytest.approx(f_hi, rel=1e-8)
    assert _pivot(ref, ours.ci_high, 2) == pytest.approx(f_lo, rel=1e-8)
    assert ours.ci_low < ours.icc < ours.ci_high


def test_bootstrap_weights_equal_items_copied_by_hand() -> None:
    x = _mixed_incomplete(6)
    rng = np.random.default_rng(7)
    weights = rng.multinomial(40, np.full(40, 1 / 40), size=4).astype(float)
    got = icc_consistency_from_weights(x, weights, k=2)
    for w, value in zip(weights, got, strict=True):
        copied = np.repeat(x, w.astype(int), axis=0)
        copied = copied[:, ~np.isnan(copied).all(axis=0)]  # a rater with no item drawn
        assert value == pytest.approx(icc_consistency_incomplete(copied).icc, abs=1e-9)
    ones = icc_consistency_from_weights(x, np.ones((1, 40)))[0]
    assert ones == pytest.approx(icc_consistency_incomplete(x).icc, abs=1e-10)


def test_clinician_form_is_the_composites_matrix_and_the_statistic_agrees() -> None:
    x, _ = simulate_matrix(np.random.default_rng(8), Design(80, 9, 2))
    scores = score_table(x)
    got = clinician_twoway(scores)
    assert got.icc == pytest.approx(icc_consistency_incomplete(x).icc, abs=1e-10)
    assert (got.n_items, got.n_clinicians) == (80, 9)
    stat = ClinicianTwoWayStatistic(scores)
    assert stat.estimate() == pytest.approx(got.icc, abs=1e-12)
    assert stat.from_weights(np.ones((1, 80)))[0] == pytest.approx(got.icc, abs=1e-10)


def test_no_item_rated_twice_is_refused_naming_the_degrees_of_freedom() -> None:
    x = np.full((6, 3), np.nan)
    x[np.arange(6), np.arange(6) % 3] = np.arange(6.0)
    with pytest.raises(ValueError, match="degrees of freedom"):
        icc_consistency_incomplete(x)
    with pytest.raises(ValueError, match="every rater"):
        icc_consistency_incomplete(np.column_stack([x, np.full(6, np.nan)]))
    assert np.isnan(icc_consistency_from_weights(x, np.ones((1, 6)))[0])


def test_rater_sets_are_the_raters_linked_by_a_drawn_item() -> None:
    # raters 0-1-2 linked by items 0 and 1, raters 3-4 by item 2; item 3 rated by 5 alone
    # links nobody; rater 6 rated nothing drawn
    x = np.full((4, 7), np.nan)
    x[0, [0, 1]] = x[1, [1, 2]] = x[2, [3, 4]] = x[3, 5] = 1.0
    x[:, 6] = np.nan
    weights = np.array([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 2.0, 1.0], [0.0, 0.0, 0.0, 3.0]])
    fit = fit_from_weights(x, weights)
    assert fit.rater_set.tolist() == [
        [0, 0, 0, 3, 3, 5, 6],
        [0, 0, 2, 3, 3, 5, 6],
        [0, 1, 2, 3, 4, 5, 6],
    ]
    # the sets among raters with an item drawn: {0,1,2} {3,4} {5}; {0,1} {3,4} {5} (rater 2's
    # only item not drawn); {5}
    assert fit.n_sets.tolist() == [3, 3, 1]
    linked = np.zeros((1, 3, 3), dtype=bool)
    linked[0, 2, 0] = linked[0, 0, 2] = True
    assert rater_sets(linked).tolist() == [[0, 1, 0]]


def test_every_resample_of_a_complete_design_has_the_designs_degrees_of_freedom() -> None:
    # 3 raters rating all 100 items: whatever the draw, one connected set, rank(L) = 2, so
    # df_error = 3n - n - 2 and df_items = n - 1 (n = 100 draws). L's null eigenvalue sits at
    # the rounding level of numpy's default rank tolerance; read from the eigenvalues, some of
    # 16 of these 2,000 resamples got rank 3 (numpy 2.4, OpenBLAS): a degree of freedom lost to
    # error, a wrong ICC
    x = _matrix(Design(100, 3, 3), 11)
    weights = resample_weights(np.random.default_rng(12), 100, 2000)
    fit = fit_from_weights(x, weights)
    assert (fit.n_sets == 1).all()
    assert (fit.df_error == 2 * 100 - 2).all()
    assert (fit.df_items == 100 - 1).all()


def _items_space_spectrum(m: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """C's positive eigenvalues and c's weighted squares along them, from the items x items
    eigendecomposition (what the rater-space reduction replaces)."""
    c_mat = np.diag(m.sum(axis=1)) - (m / m.sum(axis=0)) @ m.T
    d, v = np.linalg.eigh(c_mat)
    keep = d > RANK_TOL * max(float(d.max()), 1.0)
    return d[keep], (v[:, keep].T @ c) ** 2 / d[keep]


def _random_design(rng: np.random.Generator) -> np.ndarray:
    """Items x raters 0/1: 1 to 5 ratings per item (unequal), some raters rating few items,
    and often two sets of raters sharing no item."""
    n, r = int(rng.integers(4, 80)), int(rng.integers(2, 12))
    m = np.zeros((n, r))
    for i in range(n):
        m[i, rng.choice(r, size=int(rng.integers(1, min(r, 5) + 1)), replace=False)] = 1.0
    if rng.random() < 0.4 and r >= 4:  # split: the first items by the first raters only
        half, cut = n // 2, r // 2
        m[:half, cut:] = 0.0
        m[half:, :cut] = 0.0
        m[np.arange(half), np.arange(half) % cut] = 1.0
        m[np.arange(half, n), cut + np.arange(n - half) % (r - cut)] = 1.0
    return m[:, m.sum(axis=0) > 0]


@pytest.mark.parametrize("seed", range(6))
def test_the_rater_space_spectrum_equals_the_items_space_eigendecomposition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(40):
        m = _random_design(rng)
        c = rng.normal(size=m.shape[0])
        d, w = _items_space_spectrum(m, c)
        spectrum = design_spectrum(m)
        split = spectrum.split(c)
        assert spectrum.rank == d.size
        assert spectrum.trace == pytest.approx(d.sum(), rel=1e-12)
        assert split.sum() == pytest.approx(w.sum(), rel=1e-12)
        # Wald's pivot reads sum w / (1 + L d): equal at any L of its domain
        for lam in (-0.9 / d.max(), -0.4 / d.max(), 0.0, 0.7, 5.0, 1e3):
            ours = (split / (1.0 + lam * spectrum.d)).sum()
            assert ours == pytest.approx((w / (1.0 + lam * d)).sum(), rel=1e-12)


def test_a_design_of_many_items_has_a_few_entries_for_its_repeated_eigenvalues() -> None:
    # 600 items, 2 of 29 raters each: the items x items matrix has eigenvalue 2 about 570
    # times; the rater-space form holds it once, with its count
    rng = np.random.default_rng(3)
    m = np.zeros((600, 29))
    for i in range(600):
        m[i, rng.choice(29, size=2, replace=False)] = 1.0
    spectrum = design_spectrum(m)
    d, _ = _items_space_spectrum(m, np.zeros(600))
    assert spectrum.rank == d.size == 600 - 1
    assert spectrum.d.size <= 29 + 1
    assert spectrum.count.max() == 600 - 29
