"""Item bootstrap: reproducibility, equality with scipy.stats.bootstrap, jackknife, BCa
properties, paired differences, vectorised resamples vs one-at-a-time.

Tolerances: equality with scipy and with explicit loops 1e-10 relative (same resamples, same
arithmetic up to rounding); exact equality where the same code path must repeat itself.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from agreement.stats import (
    DifferenceStatistic,
    IccStatistic,
    bootstrap_ci,
    bootstrap_difference,
    bootstrap_distribution,
    icc,
    icc_batch,
    icc_bootstrap,
)
from agreement.stats.bootstrap import bca_interval, bca_levels, resample_weights

from .factories import MeanStatistic, random_matrix


def _matrix(seed: int = 0, n: int = 40, k: int = 4) -> np.ndarray:
    return random_matrix(np.random.default_rng(seed), n, k, likert=True)


def test_same_seed_same_result_and_generator_accepted() -> None:
    x = _matrix()
    a = icc_bootstrap(x, n_resamples=300, seed=42)
    b = icc_bootstrap(x, n_resamples=300, seed=42)
    c = icc_bootstrap(x, n_resamples=300, seed=np.random.default_rng(42))
    d = icc_bootstrap(x, n_resamples=300, seed=43)
    np.testing.assert_array_equal(a.distribution, b.distribution)
    np.testing.assert_array_equal(a.distribution, c.distribution)
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)
    assert a.seed == 42 and c.seed is None  # an int seed is recorded for the report
    assert not np.array_equal(a.distribution, d.distribution)


def test_chunking_does_not_change_the_resamples() -> None:
    stat = IccStatistic(_matrix(), "ICC(A,1)")
    whole = bootstrap_distribution(stat, n_resamples=250, seed=5)
    chunked = bootstrap_distribution(stat, n_resamples=250, seed=5, max_cells=40 * 7)
    # Same resamples; only BLAS blocking of the matrix product may change the last bits.
    np.testing.assert_allclose(whole, chunked, rtol=1e-13, atol=0)
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    one = resample_weights(rng_a, 40, 250)
    parts = [resample_weights(rng_b, 40, m) for m in (7, 7, 236)]
    np.testing.assert_array_equal(one, np.vstack(parts))


def test_resample_weights_are_multiplicities() -> None:
    w = resample_weights(np.random.default_rng(0), 30, 50)
    assert w.shape == (50, 30)
    np.testing.assert_array_equal(w.sum(axis=1), 30)
    idx = np.random.default_rng(0).integers(0, 30, size=(50, 30))
    np.testing.assert_array_equal(w[7], np.bincount(idx[7], minlength=30))


def test_vectorised_resamples_equal_one_at_a_time() -> None:
    x = _matrix(1)
    dist = bootstrap_distribution(IccStatistic(x, "ICC(C,k)"), n_resamples=60, seed=9)
    idx = np.random.default_rng(9).integers(0, x.shape[0], size=(60, x.shape[0]))
    one_by_one = np.array([icc(x[i]).get("ICC(C,k)").icc for i in idx])
    np.testing.assert_allclose(dist, one_by_one, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("form", ["ICC(A,1)", "ICC(C,1)", "ICC(1,k)"])
def test_equals_scipy_bootstrap_percentile_and_bca(form: str) -> None:
    x = _matrix(2, n=35)
    ours = icc_bootstrap(x, form=form, n_resamples=400, seed=11)

    def statistic(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        idx = np.asarray(idx).astype(int)
        flat = idx.reshape(-1, idx.shape[-1])
        return icc_batch(x[flat], form).reshape(idx.shape[:-1])

    for method, got in (("percentile", ours.percentile_ci), ("BCa", ours.bca_ci)):
        ref = stats.bootstrap(
            (np.arange(x.shape[0]),),
            statistic,
            n_resamples=400,
            method=method,
            vectorized=True,
            rng=np.random.default_rng(11),
        )
        np.testing.assert_allclose(got, tuple(ref.confidence_interval), rtol=1e-10)
    assert ours.standard_error == pytest.approx(ref.standard_error, rel=1e-10)


def test_icc_jackknife_equals_explicit_leave_one_out() -> None:
    x = _matrix(3, n=20)
    jack = IccStatistic(x, "ICC(A,1)").jackknife()
    explicit = [icc(np.delete(x, i, axis=0)).get("ICC2").icc for i in range(20)]
    np.testing.assert_allclose(jack, explicit, rtol=1e-10)


def test_generic_jackknife_and_zero_acceleration_on_symmetric_data() -> None:
    half = np.random.default_rng(4).exponential(size=30)
    values = np.concatenate([half, -half])  # symmetric about 0
    stat = MeanStatistic(values)
    jack = stat.jackknife(max_cells=7 * 60)  # several chunks
    np.testing.assert_allclose(
        jack, [np.delete(values, i).mean() for i in range(60)], rtol=1e-12, atol=1e-15
    )
    res = bootstrap_ci(stat, n_resamples=2000, seed=1)
    # Jackknife deviations are symmetric, so the acceleration is 0 and BCa differs from the
    # percentile interval only through z0: it takes the quantiles at bca_levels(z0, 0).
    assert res.acceleration == pytest.approx(0.0, abs=1e-12)
    levels = bca_levels(res.bias_correction, 0.0, 0.95)
    np.testing.assert_allclose(res.bca_ci, np.quantile(res.distribution, levels), rtol=1e-12)


class _MeanWithoutJackknife(MeanStatistic):
    def jackknife(self, *, max_cells: int = 0, groups: np.ndarray | None = None) -> np.ndarray:
        raise AssertionError("the percentile interval needs no jackknife")


def test_a_percentile_interval_skips_the_jackknife_and_leaves_bca_undefined() -> None:
    values = np.random.default_rng(5).normal(size=40)
    res = bootstrap_ci(_MeanWithoutJackknife(values), n_resamples=300, method="percentile", seed=2)
    both = bootstrap_ci(MeanStatistic(values), n_resamples=300, method="bca", seed=2)
    assert (res.ci_low, res.ci_high) == res.percentile_ci == both.percentile_ci
    assert np.isnan(res.bca_ci).all() and np.isnan(res.acceleration)
    assert np.isfinite(both.bca_ci).all()


def test_bca_levels_reduce_to_percentile_without_bias_or_acceleration() -> None:
    assert bca_levels(0.0, 0.0, 0.95) == pytest.approx((0.025, 0.975), abs=1e-12)
    assert bca_levels(0.0, 0.0, 0.90) == pytest.approx((0.05, 0.95), abs=1e-12)
    lo, hi = bca_levels(0.3, 0.0, 0.95)  # positive bias correction moves both levels up
    assert lo > 0.025 and hi > 0.975


def test_bca_interval_degenerate_cases() -> None:
    dist = np.linspace(1, 2, 101)
    (lo, hi), z0, _ = bca_interval(dist, 5.0, np.ones(10), 0.95)  # estimate outside: z0 = inf
    assert np.isinf(z0) and np.isnan(lo) and np.isnan(hi)
    (lo, hi), z0, acc = bca_interval(dist, 1.5, np.ones(10), 0.95)  # flat jackknife: a = 0
    assert acc == 0.0 and z0 == pytest.approx(0.0, abs=1e-12)


def test_percentile_interval_contains_estimate() -> None:
    for seed in range(3):
        res = icc_bootstrap(_matrix(seed, n=80), form="ICC(C,1)", n_resamples=500, seed=seed)
        assert res.percentile_ci[0] < res.estimate < res.percentile_ci[1]
        assert res.bca_ci[0] < res.estimate < res.bca_ci[1]
        assert res.n_valid == 500


def test_difference_uses_the_same_resamples() -> None:
    x = _matrix(6)
    a, b = IccStatistic(x, "ICC(A,1)"), IccStatistic(x, "ICC(C,1)")
    diff = bootstrap_difference(a, b, n_resamples=300, seed=8)
    da = bootstrap_distribution(a, n_resamples=300, seed=8)
    db = bootstrap_distribution(b, n_resamples=300, seed=8)
    np.testing.assert_allclose(diff.distribution, da - db, rtol=1e-12, atol=1e-15)
    assert diff.estimate == pytest.approx(a.estimate() - b.estimate(), rel=1e-12)
    # A statistic minus itself is exactly 0 on every resample.
    same = bootstrap_ci(DifferenceStatistic(a, a), n_resamples=50, seed=1)
    assert np.all(same.distribution == 0.0) and same.percentile_ci == (0.0, 0.0)


def test_difference_requires_one_item_universe() -> None:
    with pytest.raises(ValueError, match="share one item universe"):
        DifferenceStatistic(IccStatistic(_matrix(0, n=10)), IccStatistic(_matrix(0, n=11)))


def test_argument_errors() -> None:
    stat = IccStatistic(_matrix())
    with pytest.raises(ValueError, match="method"):
        bootstrap_ci(stat, method="basic")
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci(stat, confidence=95)
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_ci(stat, n_resamples=0)


def test_cells_of_a_row_draw_their_resamples_once_and_get_the_same_intervals() -> None:
    from unittest import mock

    from agreement.stats import bootstrap as bootstrap_module
    from agreement.stats.icc_bootstrap import icc_bootstrap
    from agreement.stats.shared import fingerprint, shared_work

    rng = np.random.default_rng(8)
    ratings = rng.normal(size=(40, 3)) + rng.normal(size=(40, 1))
    alone = [icc_bootstrap(ratings, n_resamples=300, seed=5) for _ in range(2)]
    draws = mock.Mock(wraps=bootstrap_module.resample_weights)
    with mock.patch.object(bootstrap_module, "resample_weights", draws), shared_work():
        shared = [icc_bootstrap(ratings, n_resamples=300, seed=5) for _ in range(2)]
        chunks = draws.call_count
        # a Generator's stream moves on: its draws are never taken from another cell's
        icc_bootstrap(ratings, n_resamples=300, seed=np.random.default_rng(5))
        assert draws.call_count == 2 * chunks
        weights = bootstrap_module.resample_weights(np.random.default_rng(1), 40, 3)
        assert fingerprint(weights) == fingerprint(weights.copy())
    for a, b in zip(alone, shared, strict=True):
        assert (a.ci_low, a.ci_high, a.n_valid) == (b.ci_low, b.ci_high, b.n_valid)


def test_fingerprints_stay_right_past_the_arrays_remembered():
    """Inside shared_work a fingerprint is remembered by the array's identity for the last
    FINGERPRINTS_KEPT arrays; past them each is still the hash of its own bytes."""
    from agreement.stats.shared import FINGERPRINTS_KEPT, fingerprint, shared_work

    arrays = [np.full((2, 3), float(i)) for i in range(FINGERPRINTS_KEPT + 5)]
    outside = [fingerprint(a) for a in arrays]
    with shared_work():
        inside = [fingerprint(a) for a in arrays] + [fingerprint(a) for a in arrays]
    assert inside == outside + outside
    assert len(set(outside)) == len(arrays)
