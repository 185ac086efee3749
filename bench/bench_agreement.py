"""Benchmark of agreement.stats against named baselines, on the same data.

    .venv/bin/python bench/bench_agreement.py [--quick]

ICC forms and the bootstrap against pingouin, interval Krippendorff's alpha against the
krippendorff package; values are asserted equal before any ratio is printed. Procedure and
targets: bench/README.md.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import krippendorff
import pingouin as pg

from agreement.stats import (
    FORMS,
    IccStatistic,
    bootstrap_ci,
    icc_from_long,
    krippendorff_alpha,
)
from tests.support.reference import pingouin_unrounded

Row = tuple[str, float, float | None, str, float | None, str]


def best_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def peak_memory(fn: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def ratings(rng: np.random.Generator, n: int, k: int, *, likert: bool) -> np.ndarray:
    x = rng.normal(size=(n, 1)) + 0.5 * rng.normal(size=(1, k)) + rng.normal(size=(n, k))
    return np.clip(np.round(3 + x), 1, 5) if likert else x


def long_table(x: np.ndarray) -> pd.DataFrame:
    n, k = x.shape
    return pd.DataFrame(
        {"item": np.repeat(np.arange(n), k), "rater": np.tile(np.arange(k), n), "value": x.ravel()}
    )


# --------------------------------------------------------------------------------------------


def bench_icc(n: int, rng: np.random.Generator) -> Row:
    df = long_table(ratings(rng, n, 5, likert=True))
    t_ours, ours = best_time(lambda: icc_from_long(df), 5)
    t_pg, ref = best_time(
        lambda: pg.intraclass_corr(df, targets="item", raters="rater", ratings="value"), 2
    )
    with pingouin_unrounded():
        ref_unrounded = pg.intraclass_corr(df, targets="item", raters="rater", ratings="value")
    for pos, form in enumerate(FORMS):  # rows by position (pingouin 0.7 labels are unstable)
        e, r, ru = ours.get(form), ref.iloc[pos], ref_unrounded.iloc[pos]
        assert abs(e.icc - r["ICC"]) <= 1e-9 * max(1.0, abs(r["ICC"])), form
        assert abs(e.f - r["F"]) <= 1e-9 * abs(r["F"]), form
        assert np.allclose([e.ci_low, e.ci_high], ru["CI95"], rtol=1e-9, atol=1e-12), form
    ratio = t_pg / t_ours
    return (
        f"ICC, 6 forms, long table {n:,} x 5",
        t_ours,
        t_pg,
        "pingouin.intraclass_corr",
        ratio,
        _met(ratio, 10),
    )


def bench_bootstrap(n_resamples: int, n_pg: int, rng: np.random.Generator) -> Row:
    n, k = 1000, 5
    x = ratings(rng, n, k, likert=True)
    stat = IccStatistic(x, "ICC(A,1)")
    t_ours, res = best_time(lambda: bootstrap_ci(stat, n_resamples=n_resamples, seed=1), 3)
    # Baseline: the loop a user would write around pingouin, on the same resamples.
    idx = np.random.default_rng(1).integers(0, n, size=(n_pg, n))
    raters = np.tile(np.arange(k), n)
    rows = np.repeat(np.arange(n), k)  # resampled rows get fresh labels, so duplicates stay

    def pingouin_loop() -> list[float]:
        out = []
        for i in idx:
            d = pd.DataFrame({"item": rows, "rater": raters, "value": x[i].ravel()})
            out.append(pg.intraclass_corr(d, "item", "rater", "value").iloc[1]["ICC"])
        return out

    t_loop, ref = best_time(pingouin_loop, 1)
    np.testing.assert_allclose(res.distribution[:n_pg], ref, rtol=1e-9, atol=1e-12)
    t_pg = t_loop / n_pg * n_resamples
    ratio = t_pg / t_ours
    return (
        f"bootstrap ICC(2,1) {n_resamples:,} resamples, {n:,} x {k} (pct + BCa)",
        t_ours,
        t_pg,
        f"pingouin loop ({n_pg} timed, x{n_resamples / n_pg:g} extrapolated)",
        ratio,
        _met(ratio, 100),
    )


def _alpha_long(x: np.ndarray) -> pd.DataFrame:
    df = long_table(x)
    return df.loc[df["value"].notna()].reset_index(drop=True)


def bench_alpha(n: int, rng: np.random.Generator) -> list[tuple[str, ...]]:
    out = []
    for kind in ("Likert 1-5", "continuous"):
        x = ratings(rng, n, 5, likert=kind.startswith("Likert"))
        x[rng.random(x.shape) < 0.1] = np.nan
        df = _alpha_long(x)
        t_ours, ours = best_time(lambda df=df: krippendorff_alpha(df, level="interval"), 3)
        mem_ours = peak_memory(lambda df=df: krippendorff_alpha(df, level="interval"))
        n_distinct = int(np.unique(x[~np.isnan(x)]).size)
        if kind.startswith("Likert"):
            wide = x.T.copy()  # the package's native input: raters x units
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t_pkg, ref = best_time(
                    lambda wide=wide: krippendorff.alpha(
                        reliability_data=wide, level_of_measurement="interval"
                    ),
                    2,
                )
                mem_pkg = peak_memory(
                    lambda wide=wide: krippendorff.alpha(
                        reliability_data=wide, level_of_measurement="interval"
                    )
                )
            assert abs(ours.alpha - ref) <= 1e-10, (ours.alpha, ref)
            pkg = f"{t_pkg:8.3f} s  {mem_pkg / 2**20:8.1f} MiB"
            ratio = f"{t_pkg / t_ours:7.1f}x time, {mem_pkg / mem_ours:5.1f}x memory"
        else:
            need = n * n_distinct**2 * 8  # one float64 V x V coincidence block per unit
            pkg = f"cannot run: needs ~{need / 2**40:,.0f} TiB (V = {n_distinct:,} values)"
            ratio = "-"
        out.append(
            (
                f"interval alpha {n:,} units x 5, {kind}, 10% missing",
                f"{t_ours:8.3f} s  {mem_ours / 2**20:8.1f} MiB",
                pkg,
                ratio,
                f"alpha = {ours.alpha:.6f}",
            )
        )
    return out


def _met(ratio: float, target: float) -> str:
    return f">= {target:g}x: {'met' if ratio >= target else 'NOT met'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, a few seconds")
    args = parser.parse_args()
    rng = np.random.default_rng(2024)
    sizes = [10_000] if args.quick else [10_000, 100_000]
    n_boot, n_pg = (200, 10) if args.quick else (1000, 50)
    n_alpha = 20_000 if args.quick else 100_000

    print(
        f"numpy {np.__version__}, pandas {pd.__version__}, pingouin {pg.__version__}, "
        f"krippendorff {version('krippendorff')}, {'--quick' if args.quick else 'full'} run"
    )
    rows = [bench_icc(n, rng) for n in sizes]
    rows.append(bench_bootstrap(n_boot, n_pg, rng))
    print()
    print(f"{'benchmark':<58} {'ours':>9} {'baseline':>10} {'ratio':>9}  target / baseline")
    for name, t_ours, t_base, base, ratio, met in rows:
        print(f"{name:<58} {t_ours:8.3f}s {t_base:9.3f}s {ratio:8.1f}x  {met}  [{base}]")
    print()
    print(
        "Krippendorff's alpha (interval): ours = closed form on the long table; "
        "baseline = krippendorff.alpha on the raters x units matrix"
    )
    for name, ours, pkg, ratio, value in bench_alpha(n_alpha, rng):
        print(f"  {name}\n    ours: {ours}   package: {pkg}   {ratio}   {value}")


if __name__ == "__main__":
    main()
