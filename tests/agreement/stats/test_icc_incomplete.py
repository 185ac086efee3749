"""Incomplete designs: one-way ICC(1) with k0, and REML crossed-model ICC(A,1)/ICC(C,1).

Tolerances: REML vs ANOVA on complete balanced data 1e-8 (relative on the components,
absolute on the ICCs; observed ~1e-10 after the Newton polish); REML vs statsmodels MixedLM 2e-4 relative on the variance components and
1e-4 absolute on the ICCs (statsmodels' own optimiser stops earlier than ours); closed-form
identities 1e-10.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from agreement.stats import icc, icc_oneway_unbalanced, icc_reml, reml_crossed_components

from .factories import SHROUT_FLEISS, long_from_matrix, random_matrix


def test_oneway_balanced_equals_complete_icc1() -> None:
    x = random_matrix(np.random.default_rng(0), 30, 4)
    ours = icc_oneway_unbalanced(long_from_matrix(x))
    ref = icc(x)
    assert ours.k0 == pytest.approx(4.0, rel=1e-12)  # k0 = k when every n_i = k
    for got, form in ((ours.icc, "ICC(1,1)"), (ours.icc_k0, "ICC(1,k)")):
        assert got == pytest.approx(ref.get(form).icc, rel=1e-10)
    assert ours.f == pytest.approx(ref.get("ICC1").f, rel=1e-10)
    assert (ours.df1, ours.df2) == (ref.get("ICC1").df1, ref.get("ICC1").df2)
    assert ours.p == pytest.approx(ref.get("ICC1").p, rel=1e-8)
    assert ours.ci_low == pytest.approx(ref.get("ICC1").ci_low, rel=1e-10)
    assert ours.ci_high == pytest.approx(ref.get("ICC1").ci_high, rel=1e-10)
    assert ours.ci_k0_low == pytest.approx(ref.get("ICC1k").ci_low, rel=1e-10)


def test_oneway_unbalanced_by_hand() -> None:
    # Items a: (1, 2, 3), b: (4, 6), c: (5,), d: (7, 9, 8, 8): N = 10, n = 4.
    data = {"a": [1, 2, 3], "b": [4, 6], "c": [5], "d": [7, 9, 8, 8]}
    df = pd.DataFrame(
        [(item, f"r{j}", v) for item, vals in data.items() for j, v in enumerate(vals)],
        columns=["item", "rater", "value"],
    )
    # grand mean = 53 / 10 = 5.3; item means 2, 5, 5, 8
    # SSB = 3(2-5.3)^2 + 2(5-5.3)^2 + 1(5-5.3)^2 + 4(8-5.3)^2 = 32.67 + .18 + .09 + 29.16 = 62.1
    # SSW = (1+0+1) + (1+1) + 0 + (1+1+0+0) = 6
    # MSB = 62.1 / 3 = 20.7, MSW = 6 / (10 - 4) = 1
    # k0 = (10 - (9 + 4 + 1 + 16) / 10) / 3 = (10 - 3) / 3 = 7/3
    # ICC(1) = (20.7 - 1) / (20.7 + (7/3 - 1) * 1) = 19.7 / 22.0333... = 0.894100
    r = icc_oneway_unbalanced(df)
    assert r.k0 == pytest.approx(7 / 3, rel=1e-12)
    assert r.ms_between == pytest.approx(20.7, rel=1e-12)
    assert r.ms_within == pytest.approx(1.0, rel=1e-12)
    assert r.icc == pytest.approx(19.7 / (20.7 + 4 / 3), rel=1e-12)
    assert r.icc_k0 == pytest.approx(19.7 / 20.7, rel=1e-12)
    assert (r.df1, r.df2, r.n_items, r.n_ratings) == (3, 6, 4, 10)
    assert r.ci_low < r.icc < r.ci_high


def test_oneway_rejects_duplicates() -> None:
    df = long_from_matrix(SHROUT_FLEISS)
    with pytest.raises(ValueError, match="duplicate"):
        icc_oneway_unbalanced(pd.concat([df, df.iloc[[0]]]))


def _anova_components(x: np.ndarray) -> tuple[float, float, float]:
    ms = icc(x).mean_squares
    n, k = x.shape
    return (ms.ms_rows - ms.ms_error) / k, (ms.ms_cols - ms.ms_error) / n, ms.ms_error


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reml_equals_anova_on_complete_balanced_data(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = random_matrix(rng, 40, 5, rater_sd=0.8) * 3 + 10
    s_item, s_rater, s_e = _anova_components(x)
    assert min(s_item, s_rater, s_e) > 0  # the property holds for positive components
    comp = reml_crossed_components(long_from_matrix(x))
    assert comp.converged
    assert comp.item == pytest.approx(s_item, rel=1e-8)
    assert comp.rater == pytest.approx(s_rater, rel=1e-8)
    assert comp.residual == pytest.approx(s_e, rel=1e-8)
    assert comp.intercept == pytest.approx(x.mean(), rel=1e-9)
    r = icc_reml(long_from_matrix(x), k=5)
    ref = icc(x)
    assert r.icc_a1 == pytest.approx(ref.get("ICC2").icc, abs=1e-8)
    assert r.icc_c1 == pytest.approx(ref.get("ICC3").icc, abs=1e-8)
    assert r.icc_ak == pytest.approx(ref.get("ICC2k").icc, abs=1e-8)
    assert r.icc_ck == pytest.approx(ref.get("ICC3k").icc, abs=1e-8)


def test_reml_on_shrout_fleiss() -> None:
    # Components all positive here: REML ICC(A,1)/ICC(C,1) = .29/.71 as published.
    r = icc_reml(long_from_matrix(SHROUT_FLEISS))
    assert r.k == 4
    assert r.icc_a1 == pytest.approx(icc(SHROUT_FLEISS).get("ICC2").icc, abs=1e-8)
    assert r.icc_c1 == pytest.approx(icc(SHROUT_FLEISS).get("ICC3").icc, abs=1e-8)


def test_reml_boundary_when_rater_mean_square_is_below_error() -> None:
    # If MSC < MSE the ANOVA rater component is negative; REML puts it at 0 and pools
    # SSC into the error: s2_e = (SSC + SSE) / (df_C + df_E), s2_item = (MSR - s2_e) / k.
    rng = np.random.default_rng(5)
    x = random_matrix(rng, 30, 4, rater_sd=0.0)
    x = x - x.mean(axis=0) + x.mean()  # identical rater means: SSC = 0 exactly
    n, k = x.shape
    ms = icc(x).mean_squares
    sse = ms.ms_error * (n - 1) * (k - 1)
    pooled = sse / ((n - 1) * (k - 1) + (k - 1))
    comp = reml_crossed_components(long_from_matrix(x))
    assert comp.rater == pytest.approx(0.0, abs=1e-8)
    assert comp.residual == pytest.approx(pooled, rel=1e-8)
    assert comp.item == pytest.approx((ms.ms_rows - pooled) / k, rel=1e-8)


def _unbalanced(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n_items, n_raters, n_obs = 60, 8, 300
    d = pd.DataFrame(
        {"item": rng.integers(0, n_items, n_obs), "rater": rng.integers(0, n_raters, n_obs)}
    ).drop_duplicates()
    d["value"] = (
        rng.normal(size=n_items)[d["item"]] * 1.0
        + rng.normal(size=n_raters)[d["rater"]] * 0.8
        + rng.normal(size=len(d))
    )
    return d.reset_index(drop=True)


@pytest.mark.parametrize("seed", [0, 1])
def test_reml_matches_statsmodels_mixedlm_on_unbalanced_design(seed: int) -> None:
    sm = pytest.importorskip("statsmodels.api")
    d = _unbalanced(seed)
    comp = reml_crossed_components(d)
    # Crossed random effects in MixedLM: one group containing everything, one variance
    # component per factor (statsmodels docs, "variance components").
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = sm.MixedLM.from_formula(
            "value ~ 1",
            groups=np.ones(len(d)),
            re_formula="0",
            vc_formula={"item": "0 + C(item)", "rater": "0 + C(rater)"},
            data=d,
        ).fit(reml=True)
    vc = dict(zip(fit.model.exog_vc.names, fit.vcomp, strict=True))
    assert comp.item == pytest.approx(vc["item"], rel=2e-4)
    assert comp.rater == pytest.approx(vc["rater"], rel=2e-4)
    assert comp.residual == pytest.approx(fit.scale, rel=2e-4)
    assert comp.intercept == pytest.approx(fit.fe_params.iloc[0], abs=1e-3)
    # Same REML criterion: our -2 l_R equals -2 * statsmodels' REML log-likelihood.
    assert comp.reml_deviance == pytest.approx(-2 * fit.llf, abs=1e-4)
    # Our optimum is at least as good as statsmodels' (REML criterion is minimised).
    icc_a1_sm = vc["item"] / (vc["item"] + vc["rater"] + fit.scale)
    assert icc_reml(d).icc_a1 == pytest.approx(icc_a1_sm, abs=1e-4)


def test_reml_icc_default_k_is_mean_ratings_per_item() -> None:
    d = _unbalanced(3)
    r = icc_reml(d)
    assert r.k == pytest.approx(len(d) / d["item"].nunique())
    si, sr, se = r.components.item, r.components.rater, r.components.residual
    assert r.icc_ck == pytest.approx(si / (si + se / r.k), rel=1e-12)
    assert r.icc_ak == pytest.approx(si / (si + (sr + se) / r.k), rel=1e-12)


def test_reml_swaps_factors_when_more_raters_than_items() -> None:
    # Transposing the roles of item and rater swaps the two components (same likelihood).
    d = _unbalanced(4)
    a = reml_crossed_components(d)
    b = reml_crossed_components(d.rename(columns={"item": "rater", "rater": "item"}))
    assert b.item == pytest.approx(a.rater, rel=1e-5)
    assert b.rater == pytest.approx(a.item, rel=1e-5)
    assert b.reml_deviance == pytest.approx(a.reml_deviance, abs=1e-7)


def test_reml_input_errors() -> None:
    d = _unbalanced(0)
    with pytest.raises(ValueError, match="duplicate"):
        reml_crossed_components(pd.concat([d, d.iloc[[0]]]))
    with pytest.raises(ValueError, match="at least 2 items and 2 raters"):
        reml_crossed_components(d.drop_duplicates("item").assign(rater=1))
