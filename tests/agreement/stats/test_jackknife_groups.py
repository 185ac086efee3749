"""The grouped jackknife behind BCa's acceleration above JACKKNIFE_GROUPS items
(agreement.stats.bootstrap): how it groups the items, that its values are the explicit
leave-one-group-out statistics, and that it estimates the acceleration the leave-one-out
jackknife gives.

Tolerances: explicit loops 1e-10 relative (the same sums up to rounding); the acceleration
within 0.005 of the leave-one-out one on a skewed sample of 3,000 items (lognormal: on six
seeds the two differed by 0.0002-0.0025 for accelerations of 0.011-0.020). 0.005 moves a 95%
BCa interval's levels by about 0.001 (d level / d a = phi(1.96) 1.96^2 = 0.22), a fifth of the
Monte Carlo error of a 97.5% quantile of 1,000 resamples (0.005)."""

from __future__ import annotations

import numpy as np
import pytest

from agreement.stats import IccStatistic, ItemStatistic, bootstrap_ci, icc
from agreement.stats import jackknife as jackknife_module
from agreement.stats.bootstrap import bca_interval
from agreement.stats.jackknife import JACKKNIFE_GROUPS, jackknife_groups

from .factories import MeanStatistic, random_matrix


def test_up_to_the_group_count_every_item_is_left_out_alone():
    assert jackknife_groups(JACKKNIFE_GROUPS) is None
    values = np.random.default_rng(1).normal(size=JACKKNIFE_GROUPS)
    assert (
        bootstrap_ci(MeanStatistic(values), n_resamples=50, seed=1).jackknife_units
        == JACKKNIFE_GROUPS
    )


def test_groups_split_the_items_at_random_into_equal_groups_the_same_each_time():
    n = 3 * JACKKNIFE_GROUPS + 17
    groups = jackknife_groups(n)
    sizes = np.bincount(groups)
    assert sizes.size == JACKKNIFE_GROUPS and sizes.min() >= 3 and sizes.max() - sizes.min() <= 1
    np.testing.assert_array_equal(groups, jackknife_groups(n))  # numbers depend on data and seed
    # not blocks of neighbours: items arrive ordered by case and model, and a group of alike
    # items would not be a sum of independent influences
    assert np.mean(groups[1:] == groups[:-1]) < 0.02


def test_moment_and_generic_jackknives_leave_each_group_out():
    x = random_matrix(np.random.default_rng(2), 640, 3, likert=True)
    groups = jackknife_groups(640)
    explicit = [icc(x[groups != g]).get("ICC2").icc for g in range(JACKKNIFE_GROUPS)]
    stat = IccStatistic(x, "ICC(A,1)")
    np.testing.assert_allclose(stat.jackknife(groups=groups), explicit, rtol=1e-10)
    generic = ItemStatistic.jackknife(stat, groups=groups, max_cells=640 * 37)  # several chunks
    np.testing.assert_allclose(generic, explicit, rtol=1e-10)


def _acceleration(statistic: ItemStatistic, jackknife: np.ndarray) -> float:
    estimate = statistic.estimate()
    return bca_interval(np.array([estimate - 1, estimate + 1]), estimate, jackknife, 0.95)[2]


def test_the_groups_estimate_the_leave_one_out_acceleration():
    values = np.random.default_rng(3).lognormal(sigma=1.0, size=3000)
    stat = MeanStatistic(values)
    exact = _acceleration(stat, stat.jackknife())
    grouped = _acceleration(stat, stat.jackknife(groups=jackknife_groups(3000)))
    assert exact > 0.01  # skewed enough for the comparison to say something
    assert grouped == pytest.approx(exact, abs=0.005)


def test_a_bootstrap_over_more_items_uses_the_groups(monkeypatch):
    values = np.random.default_rng(4).exponential(size=90)
    monkeypatch.setattr(jackknife_module, "JACKKNIFE_GROUPS", 40)
    res = bootstrap_ci(MeanStatistic(values), n_resamples=300, seed=5)
    assert res.jackknife_units == 40
    explicit = [values[jackknife_groups(90) != g].mean() for g in range(40)]
    (lo, hi), _z0, acc = bca_interval(res.distribution, res.estimate, np.array(explicit), 0.95)
    assert (res.ci_low, res.ci_high, res.acceleration) == pytest.approx((lo, hi, acc), rel=1e-12)
    assert bootstrap_ci(MeanStatistic(values[:40]), n_resamples=300, seed=5).jackknife_units == 40


def test_an_explicit_group_count_overrides_the_default():
    assert jackknife_groups(4, max_groups=4) is None
    assert np.bincount(jackknife_groups(10, max_groups=4)).tolist() == [3, 3, 2, 2]
