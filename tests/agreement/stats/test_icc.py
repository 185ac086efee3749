"""ICC on complete matrices: published values, equality with pingouin, matrix building, batches.

Tolerances: equality with pingouin is to 1e-9 relative (ICC, F, df, p, unrounded CI bounds);
published values are checked to their two printed decimals (abs 0.005).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pingouin as pg
import pytest

from agreement.stats import (
    FORMS,
    canonical_form,
    icc,
    icc_batch,
    icc_batch_all,
    icc_from_long,
    icc_matrix_from_long,
)
from agreement.stats.icc_batch import icc_from_moments, icc_item_moments
from tests.support.reference import pingouin_unrounded

from .factories import SHROUT_FLEISS, long_from_matrix, random_matrix

REL = 1e-9


def test_shrout_fleiss_1979_published_values() -> None:
    # Shrout & Fleiss (1979), Table 4: ICC(1,1)=.17, ICC(2,1)=.29, ICC(3,1)=.71,
    # ICC(1,4)=.44, ICC(2,4)=.62, ICC(3,4)=.91 for the 6 targets x 4 judges of Table 1.
    published = {
        "ICC(1,1)": 0.17,
        "ICC(2,1)": 0.29,
        "ICC(3,1)": 0.71,
        "ICC(1,k)": 0.44,
        "ICC(2,k)": 0.62,
        "ICC(3,k)": 0.91,
    }
    table = icc(SHROUT_FLEISS)
    for form, value in published.items():
        assert table.get(form).icc == pytest.approx(value, abs=0.005), form
    # Their Table 2 mean squares: BMS = 11.24, WMS = 6.26, JMS = 32.49, EMS = 1.02.
    ms = table.mean_squares
    assert ms.ms_rows == pytest.approx(11.24, abs=0.005)
    assert ms.ms_within == pytest.approx(6.26, abs=0.005)
    assert ms.ms_cols == pytest.approx(32.49, abs=0.005)
    assert ms.ms_error == pytest.approx(1.02, abs=0.005)


def _pingouin(matrix: np.ndarray, *, rounded: bool = False) -> pd.DataFrame:
    df = long_from_matrix(matrix)
    if rounded:
        return pg.intraclass_corr(df, targets="item", raters="rater", ratings="value")
    with pingouin_unrounded():
        return pg.intraclass_corr(df, targets="item", raters="rater", ratings="value")


def _assert_equal_to_pingouin(matrix: np.ndarray) -> None:
    ours = icc(matrix)
    ref = _pingouin(matrix)
    ref_rounded = _pingouin(matrix, rounded=True)
    for pos, form in enumerate(FORMS):
        # pingouin 0.7's row labels are not stable: select rows by position.
        row, row_r, est = ref.iloc[pos], ref_rounded.iloc[pos], ours.get(form)
        assert row["Type"] == form
        assert est.icc == pytest.approx(row["ICC"], rel=REL, abs=1e-12), form
        assert est.f == pytest.approx(row["F"], rel=REL), form
        assert est.df1 == row["df1"] and est.df2 == row["df2"], form
        assert est.p == pytest.approx(row["pval"], rel=1e-7, abs=1e-300), form
        lo, hi = row["CI95"]
        assert est.ci_low == pytest.approx(lo, rel=REL, abs=1e-12), form
        assert est.ci_high == pytest.approx(hi, rel=REL, abs=1e-12), form
        # Default pingouin output rounds the interval to 2 decimals.
        np.testing.assert_allclose(row_r["CI95"], [est.ci_low, est.ci_high], atol=0.005 + 1e-9)


@pytest.mark.parametrize(
    ("n", "k", "likert", "seed"),
    [(6, 4, False, 0), (30, 3, True, 1), (50, 5, True, 2), (200, 2, False, 3), (15, 7, True, 4)],
)
def test_equals_pingouin_on_random_data(n: int, k: int, likert: bool, seed: int) -> None:
    _assert_equal_to_pingouin(random_matrix(np.random.default_rng(seed), n, k, likert=likert))


def test_equals_pingouin_shrout_fleiss() -> None:
    _assert_equal_to_pingouin(SHROUT_FLEISS)


def test_equals_pingouin_with_a_constant_rater_and_heavy_ties() -> None:
    rng = np.random.default_rng(7)
    x = np.clip(np.round(3 + rng.normal(size=(40, 4))), 2, 4)  # only three distinct values
    x[:, 2] = 3.0  # one rater gives the same score to every item
    _assert_equal_to_pingouin(x)


def test_perfect_consistency_gives_icc3_one() -> None:
    x = np.array([[1.0, 3.0], [2.0, 4.0], [5.0, 7.0]])  # rater 2 = rater 1 + 2
    t = icc(x)
    assert t.get("ICC3").icc == pytest.approx(1.0, abs=1e-15)
    assert t.get("ICC3k").icc == pytest.approx(1.0, abs=1e-15)
    # MSE is zero up to rounding (~1e-31 here), so F is huge (or inf when exactly zero).
    assert t.get("ICC3").f > 1e20
    assert t.get("ICC2").icc < 1.0  # absolute agreement penalises the offset


def test_form_aliases() -> None:
    assert canonical_form("ICC2") == "ICC(A,1)"
    assert canonical_form("icc(2,1)") == "ICC(A,1)"
    assert canonical_form("ICC3k") == "ICC(C,k)"
    assert canonical_form("ICC(3,K)") == "ICC(C,k)"
    assert canonical_form("ICC(1,k)") == "ICC(1,k)"
    with pytest.raises(ValueError, match="unknown ICC form"):
        canonical_form("ICC(4,1)")


def test_to_frame_has_six_rows_in_pingouin_order() -> None:
    frame = icc(SHROUT_FLEISS).to_frame()
    assert frame["form"].tolist() == list(FORMS)
    assert frame["shrout_fleiss"].tolist() == ["ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"]


# --------------------------------------------------------------------------------------------
# Long table -> matrix


def test_matrix_from_long_round_trip_and_icc_from_long() -> None:
    x = random_matrix(np.random.default_rng(11), 25, 4)
    df = long_from_matrix(x)  # shuffled rows
    m = icc_matrix_from_long(df)
    np.testing.assert_array_equal(m.to_numpy(), x)  # labels sort back to the original order
    assert m.index.name == "item" and m.columns.name == "rater"
    assert icc_from_long(df).get("ICC2").icc == pytest.approx(icc(x).get("ICC2").icc, rel=1e-12)


def test_matrix_from_long_custom_column_names() -> None:
    df = long_from_matrix(SHROUT_FLEISS).rename(
        columns={"item": "target", "rater": "judge", "value": "score"}
    )
    t = icc_from_long(df, item="target", rater="judge", value="score")
    assert t.get("ICC(3,1)").icc == pytest.approx(icc(SHROUT_FLEISS).get("ICC3").icc, rel=1e-12)


def test_matrix_from_long_errors_name_the_problem() -> None:
    df = long_from_matrix(SHROUT_FLEISS)
    with pytest.raises(ValueError, match="duplicate"):
        icc_matrix_from_long(pd.concat([df, df.iloc[[0]]]))
    with pytest.raises(ValueError, match=r"incomplete design: 1 of 24"):
        icc_matrix_from_long(df.iloc[1:])
    with_nan = df.copy()
    with_nan.loc[3, "value"] = np.nan
    with pytest.raises(ValueError, match="missing value"):
        icc_matrix_from_long(with_nan)
    with pytest.raises(ValueError, match="missing column"):
        icc_matrix_from_long(df.drop(columns="rater"))
    with pytest.raises(ValueError, match="must be numeric"):
        icc_matrix_from_long(df.assign(value="x"))
    with pytest.raises(ValueError, match="at least 2 items"):
        icc(np.ones((1, 3)))


# --------------------------------------------------------------------------------------------
# Batches


def test_batch_equals_one_at_a_time() -> None:
    rng = np.random.default_rng(3)
    stack = np.stack([random_matrix(rng, 20, 4, likert=True) for _ in range(25)])
    batch = icc_batch_all(stack)
    single = np.array([[icc(m).get(f).icc for f in FORMS] for m in stack])
    np.testing.assert_allclose(batch, single, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(icc_batch(stack, "ICC3"), single[:, 2], rtol=1e-10, atol=1e-12)


def test_weighted_moments_equal_repeated_rows() -> None:
    # Item multiplicities w give the ICC of the matrix that repeats item i w_i times.
    rng = np.random.default_rng(4)
    x = random_matrix(rng, 15, 3) * 100 + 1000  # offset and scale: checks the centring
    moments = icc_item_moments(x)
    idx = rng.integers(0, 15, size=(30, 15))
    weights = np.stack([np.bincount(row, minlength=15) for row in idx]).astype(float)
    np.testing.assert_allclose(
        icc_from_moments(weights @ moments, 3), icc_batch_all(x[idx]), rtol=1e-9, atol=1e-11
    )
