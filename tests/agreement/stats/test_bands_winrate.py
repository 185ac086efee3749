"""Koo & Li bands and the HELM mean win rate (exact arithmetic, compared with ==/1e-12)."""

from __future__ import annotations

from collections import defaultdict
from statistics import mean

import numpy as np
import pandas as pd
import pytest

from agreement.stats import (
    helm_win_rates,
    koo_li_band,
    koo_li_bands,
    koo_li_interval_band,
    package_versions,
    per_benchmark_win_rates,
)

KOO_LI_EXAMPLES = {
    "poor": (-0.2, 0.0, 0.4999),
    "moderate": (0.5, 0.74),
    "good": (0.75, 0.8999),
    "excellent": (0.9, 1.0),
    "undefined": (float("nan"), None),
}


@pytest.mark.parametrize(
    ("value", "band"),
    [(value, band) for band, values in KOO_LI_EXAMPLES.items() for value in values],
)
def test_koo_li_band(value: float | None, band: str) -> None:
    assert koo_li_band(value) == band


def test_koo_li_bands_vectorised_and_interval() -> None:
    got = koo_li_bands([0.1, 0.5, 0.8, 0.95, np.nan])
    assert got.tolist() == ["poor", "moderate", "good", "excellent", "undefined"]
    # MedHELM's LLM jury: 0.474 (0.100, 0.690) -> read on the interval: poor to moderate.
    assert koo_li_interval_band(0.100, 0.690) == "poor to moderate"
    assert koo_li_interval_band(0.76, 0.85) == "good"
    with pytest.raises(ValueError):
        koo_li_interval_band(0.95, 0.1)


def test_win_rate_by_hand() -> None:
    scores = {
        # b1: m1 beats 3 -> 3/3; m2 beats m4 and ties m3 -> 1.5/3; m3 the same; m4 0/3
        "b1": {"m1": 0.9, "m2": 0.8, "m3": 0.8, "m4": 0.1},
        # b2: only m1 and m2 -> m2 1/1, m1 0/1 (m4's missing score is ignored)
        "b2": {"m1": 0.2, "m2": 0.5, "m4": np.nan},
        # b3: a single model is not comparable: skipped
        "b3": {"m3": 0.7},
    }
    df = pd.DataFrame(
        [(bench, model, v) for bench, row in scores.items() for model, v in row.items()],
        columns=["benchmark", "model", "score"],
    )
    out = helm_win_rates(df).set_index("model")
    # means: m1 (1 + 0)/2 = .5, m2 (.5 + 1)/2 = .75, m3 .5 (b1 only), m4 0
    assert out.loc["m1", "win_rate"] == 0.5 and out.loc["m2", "win_rate"] == 0.75
    assert out.loc["m3", "win_rate"] == 0.5 and out.loc["m4", "win_rate"] == 0.0
    assert out.loc["m3", "n_benchmarks"] == 1
    assert list(out.index) == ["m2", "m1", "m3", "m4"]  # by win rate, ties by name
    per = per_benchmark_win_rates(df).set_index(["benchmark", "model"])["win_rate"]
    assert per[("b1", "m2")] == 0.5 and ("b3", "m3") not in per.index


def _helm_reference(df: pd.DataFrame, lower_is_better: bool) -> dict[str, float]:
    """Port of HELM's compute_aggregate_row_win_rates (summarize.py), "mean" aggregation."""
    models = sorted(df["model"].unique())
    per_row: dict[str, list[float]] = {m: [] for m in models}
    for _, col in df.groupby("benchmark"):
        values = dict(zip(col["model"], col["score"], strict=True))
        value_to_count: dict[float, int] = defaultdict(int)
        for v in values.values():
            value_to_count[v] += 1
        value_to_wins: dict[float, float] = {}
        acc = 0
        for value, count in sorted(value_to_count.items(), reverse=lower_is_better):
            value_to_wins[value] = acc + (count - 1) / 2
            acc += count
        if acc < 2:
            continue
        for m, v in values.items():
            per_row[m].append(value_to_wins[v] / (acc - 1))
    return {m: mean(w) for m, w in per_row.items() if w}


@pytest.mark.parametrize("lower_is_better", [False, True])
def test_win_rate_equals_helm_algorithm_on_random_data(lower_is_better: bool) -> None:
    rng = np.random.default_rng(0)
    rows = [
        (f"b{b}", f"m{m}", float(rng.integers(0, 6)))  # few distinct values: many ties
        for b in range(12)
        for m in range(9)
        if rng.random() < 0.8
    ]
    df = pd.DataFrame(rows, columns=["benchmark", "model", "score"])
    ours = helm_win_rates(df, higher_is_better=not lower_is_better).set_index("model")
    ref = _helm_reference(df, lower_is_better)
    assert set(ours.index) == set(ref)
    for m, v in ref.items():
        assert ours.loc[m, "win_rate"] == pytest.approx(v, abs=1e-12)


def test_win_rate_rejects_duplicates() -> None:
    df = pd.DataFrame([("b", "m", 1.0), ("b", "m", 2.0)], columns=["benchmark", "model", "score"])
    with pytest.raises(ValueError, match="duplicate"):
        helm_win_rates(df)


def test_package_versions_for_reports() -> None:
    versions = package_versions()
    assert set(versions) == {"numpy", "scipy", "pandas", "krippendorff"}
    assert versions["numpy"] == np.__version__
