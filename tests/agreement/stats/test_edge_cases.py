"""Degenerate inputs give a defined, explained answer: perfect agreement in the one-way ICC,
constant ratings in REML, bootstrap resamples of a single item, NumPy integer seeds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agreement.stats import (
    IccStatistic,
    bootstrap_ci,
    icc,
    icc_bootstrap,
    icc_oneway_unbalanced,
    icc_reml,
    reml_crossed_components,
)
from agreement.stats.bootstrap import resample_weights

from .factories import long_from_matrix, random_matrix


def _long(data: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [(item, f"r{j}", v) for item, vals in data.items() for j, v in enumerate(vals)],
        columns=["item", "rater", "value"],
    )


def test_oneway_perfect_agreement_is_one_with_infinite_f() -> None:
    r = icc_oneway_unbalanced(_long({"a": [1, 1, 1], "b": [4, 4], "c": [5], "d": [2, 2, 2, 2]}))
    assert r.ms_within == 0.0
    assert (r.icc, r.icc_k0, r.f, r.p) == (1.0, 1.0, np.inf, 0.0)
    # The same convention as the complete-design ICC(1,1).
    x = np.array([[1.0, 1.0], [4.0, 4.0], [2.0, 2.0]])
    assert (icc(x).get("ICC1").icc, icc(x).get("ICC1").f) == (r.icc, r.f)


def test_oneway_constant_ratings_are_nan() -> None:
    r = icc_oneway_unbalanced(_long({"a": [3, 3], "b": [3, 3, 3], "c": [3]}))
    assert np.isnan(r.icc) and np.isnan(r.icc_k0) and np.isnan(r.f)


def test_reml_on_constant_ratings_is_nan_with_a_reason() -> None:
    d = long_from_matrix(np.full((6, 3), 4.0)).iloc[:-2]  # incomplete, every value 4
    comp = reml_crossed_components(d)
    assert np.isnan([comp.item, comp.rater, comp.residual, comp.reml_deviance]).all()
    assert comp.converged is False
    assert "all 16 ratings equal 4" in comp.message
    assert comp.intercept == 4.0
    r = icc_reml(d)
    assert np.isnan([r.icc_a1, r.icc_c1, r.icc_ak, r.icc_ck]).all()


def test_bootstrap_resample_of_one_distinct_item_is_invalid() -> None:
    # Two items: about half of the resamples draw the same item twice, which leaves no
    # between-item variance; such a resample is NaN and not counted as valid.
    x = np.array([[1.0, 2.0, 1.5], [4.0, 3.0, 5.0]])
    res = icc_bootstrap(x, form="ICC(A,1)", n_resamples=200, seed=3, method="percentile")
    single = (resample_weights(np.random.default_rng(3), 2, 200) > 0).sum(axis=1) == 1
    assert 50 < single.sum() < 150
    assert np.isnan(res.distribution[single]).all()
    assert np.isfinite(res.distribution[~single]).all()
    assert res.n_valid == int((~single).sum())


def test_numpy_integer_seed_is_recorded_as_int() -> None:
    stat = IccStatistic(random_matrix(np.random.default_rng(0), 20, 3), "ICC(C,1)")
    for seed in (np.int64(7), np.int32(7), np.uint16(7)):
        res = bootstrap_ci(stat, n_resamples=50, seed=seed)
        assert res.seed == 7 and type(res.seed) is int
        np.testing.assert_array_equal(
            res.distribution, bootstrap_ci(stat, n_resamples=50, seed=7).distribution
        )
    assert bootstrap_ci(stat, n_resamples=50, seed=np.random.default_rng(7)).seed is None
    with pytest.raises(TypeError, match="seed"):
        bootstrap_ci(stat, n_resamples=50, seed=True)
