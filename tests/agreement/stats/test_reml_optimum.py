"""REML finds the optimum also when a variance component is small or on the boundary.

References: on complete balanced data REML equals the ANOVA estimates truncated at zero
(a negative ANOVA component is set to 0 and its sum of squares pooled into the error, the
tree-ordered maximum of the chi-square likelihood of the mean squares); on unbalanced data
an independent dense REML written here (the multivariate-normal restricted likelihood with
V = s_i ZiZi' + s_r ZrZr' + s_e I, maximised with scipy from several starts).

Tolerances: ICCs 1e-7 absolute and components 1e-6 relative (plus 1e-9 absolute for a zero
component) against ANOVA; against the dense REML the deviance is never more than 1e-6 worse
and the ICCs agree to 1e-4 absolute (the dense optimiser is the cruder of the two).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from agreement.stats import icc, icc_reml, reml_crossed_components

from .factories import long_from_matrix


def _truncated_anova(x: np.ndarray) -> tuple[float, float, float]:
    """(s2_item, s2_rater, s2_e): REML of a complete balanced crossed design."""
    n, k = x.shape
    ms = icc(x).mean_squares
    blocks = {
        "item": (ms.ms_rows * (n - 1), n - 1),
        "rater": (ms.ms_cols * (k - 1), k - 1),
    }
    ss_e, df_e = ms.ms_error * (n - 1) * (k - 1), (n - 1) * (k - 1)
    pooled: set[str] = set()
    while True:  # pool the smallest mean square below the error one, then look again
        s2_e = ss_e / df_e
        below = [(ss / df, name) for name, (ss, df) in blocks.items() if name not in pooled]
        below = [b for b in below if b[0] < s2_e]
        if not below:
            break
        name = min(below)[1]
        pooled.add(name)
        ss_e += blocks[name][0]
        df_e += blocks[name][1]
    s_item = 0.0 if "item" in pooled else (ms.ms_rows - s2_e) / k
    s_rater = 0.0 if "rater" in pooled else (ms.ms_cols - s2_e) / n
    return s_item, s_rater, s2_e


def _check_against_anova(x: np.ndarray) -> None:
    s_item, s_rater, s_e = _truncated_anova(x)
    comp = reml_crossed_components(long_from_matrix(x))
    assert comp.converged
    for got, want in ((comp.item, s_item), (comp.rater, s_rater), (comp.residual, s_e)):
        assert got == pytest.approx(want, rel=1e-6, abs=1e-9)
    r = icc_reml(long_from_matrix(x))
    assert r.icc_a1 == pytest.approx(s_item / (s_item + s_rater + s_e), abs=1e-7)
    assert r.icc_c1 == pytest.approx(s_item / (s_item + s_e), abs=1e-7)


def test_small_item_component_is_not_stuck_at_zero() -> None:
    # The example: 400 items x 3 raters, item SD 0.15, noise SD 1.
    rng = np.random.default_rng(2)
    x = rng.normal(size=(400, 1)) * 0.15 + rng.normal(size=(400, 3))
    anova = icc(x).get("ICC(A,1)").icc
    assert anova == pytest.approx(0.0127, abs=5e-5)
    r = icc_reml(long_from_matrix(x))
    assert r.icc_a1 == pytest.approx(anova, abs=1e-7)
    _check_against_anova(x)


@pytest.mark.parametrize("seed", range(30))
def test_reml_equals_truncated_anova_on_random_balanced_designs(seed: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    n, k = int(rng.integers(5, 120)), int(rng.integers(2, 7))
    item_sd, rater_sd = rng.choice([0.0, 0.05, 0.15, 0.5, 2.0], size=2)
    x = (
        rng.normal(size=(n, 1)) * item_sd
        + rng.normal(size=(1, k)) * rater_sd
        + rng.normal(size=(n, k)) * rng.choice([0.3, 1.0, 5.0])
        + rng.normal() * 10
    )
    _check_against_anova(x)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("offset", [0.0, 0.3, 1.5])
def test_two_rater_designs_with_a_rater_offset(seed: int, offset: float) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(56, 1)) * 0.2 + rng.normal(size=(56, 2))
    x[:, 1] += offset
    _check_against_anova(x)


def _dense_reml(d: pd.DataFrame) -> tuple[np.ndarray, float]:
    """Independent REML: (s2_item, s2_rater, s2_e) and -2 l_R, by brute force."""
    y = d["value"].to_numpy(float)
    zi = pd.get_dummies(d["item"]).to_numpy(float)
    zr = pd.get_dummies(d["rater"]).to_numpy(float)
    gi, gr, n = zi @ zi.T, zr @ zr.T, y.size
    one = np.ones(n)

    def dev(v: np.ndarray) -> float:
        s = np.exp(v)
        cov = s[0] * gi + s[1] * gr + s[2] * np.eye(n)
        try:
            ch = np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            return np.inf
        solve = lambda b: np.linalg.solve(ch.T, np.linalg.solve(ch, b))  # noqa: E731
        vi1, viy = solve(one), solve(y)
        beta = (one @ viy) / (one @ vi1)
        r = y - beta
        return float(
            (n - 1) * np.log(2 * np.pi)
            + 2 * np.sum(np.log(np.diag(ch)))
            + np.log(one @ vi1)
            + r @ solve(r)
        )

    var = y.var()
    best = None
    for a in (1e-4, 0.3):
        for b in (1e-4, 0.3):
            start = np.log(np.array([a, b, 1.0]) * var)
            res = optimize.minimize(
                dev,
                start,
                method="Nelder-Mead",
                options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000},
            )
            if best is None or res.fun < best.fun:
                best = res
    return np.exp(best.x), float(best.fun)


def _unbalanced(seed: int, item_sd: float, rater_sd: float) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n_items, n_raters = 24, 5
    d = pd.DataFrame(
        {"item": rng.integers(0, n_items, 70), "rater": rng.integers(0, n_raters, 70)}
    ).drop_duplicates()
    d["value"] = (
        rng.normal(size=n_items)[d["item"]] * item_sd
        + rng.normal(size=n_raters)[d["rater"]] * rater_sd
        + rng.normal(size=len(d))
    )
    return d.reset_index(drop=True)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("item_sd", "rater_sd"), [(0.15, 0.05), (0.05, 0.15), (1.0, 0.1)])
def test_reml_matches_an_independent_dense_reml_on_unbalanced_designs(
    seed: int, item_sd: float, rater_sd: float
) -> None:
    d = _unbalanced(seed, item_sd, rater_sd)
    comp = reml_crossed_components(d)
    dense, dense_dev = _dense_reml(d)
    assert comp.converged
    assert comp.reml_deviance <= dense_dev + 1e-6
    ours = np.array([comp.item, comp.rater, comp.residual])
    np.testing.assert_allclose(ours, dense, rtol=2e-3, atol=2e-4 * dense.sum())
    r = icc_reml(d)
    assert r.icc_a1 == pytest.approx(dense[0] / dense.sum(), abs=1e-4)
