"""Krippendorff's alpha: the 2011 worked example, equality with the krippendorff package,
and the interval closed form against the definition.

Tolerances: published values to their 3 printed decimals (abs 0.0005); equality with the
package and with the O(n^2) pairwise definition 1e-10.
"""

from __future__ import annotations

import itertools

import krippendorff
import numpy as np
import pandas as pd
import pytest

from agreement.stats import interval_alpha, krippendorff_alpha

from .factories import KRIPPENDORFF_2011


def _long(reliability: np.ndarray) -> pd.DataFrame:
    """coders x units -> long table (item = unit, rater = coder), missing cells absent."""
    m, n = reliability.shape
    rows = [
        (f"u{u:02d}", f"coder{c}", reliability[c, u])
        for c in range(m)
        for u in range(n)
        if not np.isnan(reliability[c, u])
    ]
    return pd.DataFrame(rows, columns=["item", "rater", "value"])


@pytest.mark.parametrize(
    ("level", "published", "exact"),
    [("nominal", 0.743, None), ("ordinal", 0.815, None), ("interval", 0.849, 0.849107)],
)
def test_krippendorff_2011_example(level: str, published: float, exact: float | None) -> None:
    # Krippendorff (2011), sec. C: 4 coders x 12 units with missing values.
    res = krippendorff_alpha(_long(KRIPPENDORFF_2011), level=level)
    assert res.alpha == pytest.approx(published, abs=0.0005)
    if exact is not None:
        assert res.alpha == pytest.approx(exact, abs=5e-7)  # REFERENCES.md: 0.849107
    # Unit 12 has a single value: not pairable. 11 units, 40 pairable values.
    assert (res.n_units, res.n_values, res.n_raters) == (11, 40, 4)
    pkg = krippendorff.alpha(reliability_data=KRIPPENDORFF_2011, level_of_measurement=level)
    assert res.alpha == pytest.approx(pkg, rel=1e-10)


def _random_reliability(seed: int, m: int, n: int, *, p_missing: float, values: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, values + 1, size=n)
    noise = rng.integers(-1, 2, size=(m, n)) * (rng.random((m, n)) < 0.4)
    data = np.clip(truth + noise, 1, values).astype(float)
    data[rng.random((m, n)) < p_missing] = np.nan
    return data


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_package_on_random_likert_data_with_missing(level: str, seed: int) -> None:
    data = _random_reliability(seed, m=5, n=80, p_missing=0.3, values=5)
    data[2, :] = np.where(np.isnan(data[2, :]), np.nan, 3.0)  # one constant coder
    ours = krippendorff_alpha(_long(data), level=level).alpha
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert ours == pytest.approx(ref, rel=1e-10, abs=1e-12)


def _alpha_by_definition(units: list[list[float]]) -> float:
    """Interval alpha straight from Krippendorff's pairwise definition (O(n^2))."""
    pairable = [u for u in units if len(u) >= 2]
    n = sum(len(u) for u in pairable)
    d_o = (
        sum(
            sum((a - b) ** 2 for a, b in itertools.permutations(u, 2)) / (len(u) - 1)
            for u in pairable
        )
        / n
    )
    allv = [v for u in pairable for v in u]
    d_e = sum((a - b) ** 2 for a, b in itertools.permutations(allv, 2)) / (n * (n - 1))
    return 1 - d_o / d_e


def test_interval_closed_form_equals_definition_on_continuous_values() -> None:
    rng = np.random.default_rng(9)
    units = [list(rng.normal(size=rng.integers(1, 5)) + i * 0.3) for i in range(25)]
    labels = [i for i, u in enumerate(units) for _ in u]
    values = [v for u in units for v in u]
    assert interval_alpha(labels, values) == pytest.approx(_alpha_by_definition(units), rel=1e-10)


def test_interval_alpha_with_nan_values_and_degenerate_cases() -> None:
    assert np.isnan(interval_alpha([1, 1, 2, 2], [3.0, 3.0, 3.0, 3.0]))  # no variation
    assert np.isnan(interval_alpha([1, 2, 3], [1.0, 2.0, 3.0]))  # nothing pairable
    # NaN values are missing ratings: unit 2 keeps one value and is dropped.
    assert interval_alpha([1, 1, 2, 2, 3, 3], [1.0, 2.0, 5.0, np.nan, 4.0, 4.0]) == pytest.approx(
        interval_alpha([1, 1, 3, 3], [1.0, 2.0, 4.0, 4.0]), rel=1e-12
    )


def test_long_table_errors() -> None:
    df = _long(KRIPPENDORFF_2011)
    with pytest.raises(ValueError, match="duplicate"):
        krippendorff_alpha(pd.concat([df, df.iloc[[0]]]))
    with pytest.raises(ValueError, match="level must be"):
        krippendorff_alpha(df, level="cardinal")
    with pytest.raises(ValueError, match="missing column"):
        krippendorff_alpha(df.drop(columns="value"))
    # A NaN value is just a missing rating.
    with_nan = pd.concat([df, pd.DataFrame([("u11", "coderA", np.nan)], columns=df.columns)])
    assert krippendorff_alpha(with_nan).alpha == krippendorff_alpha(df).alpha
