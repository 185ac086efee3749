"""HELM mean win rate.

Source: HELM (Liang et al. 2023, TMLR; code ``helm.benchmark.presentation.summarize.
compute_aggregate_row_win_rates``), used by MedHELM for its leaderboard: for each benchmark,
a model's win rate is the share of the *other* models with a score on that benchmark that it
beats, ties counting one half, i.e. (#worse + (#tied - 1) / 2) / (n_models - 1); benchmarks
with fewer than 2 scored models are skipped; a model's mean win rate is the plain mean over
the benchmarks where it has a score.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .common import examples, require_columns


def per_benchmark_win_rates(
    scores: pd.DataFrame,
    *,
    benchmark: str = "benchmark",
    model: str = "model",
    score: str = "score",
    higher_is_better: bool = True,
) -> pd.DataFrame:
    """Win rate of each model on each benchmark: columns benchmark, model, score, win_rate.

    Rows with a missing score are ignored; duplicate (benchmark, model) rows raise.
    """
    require_columns(scores, (benchmark, model, score), what="score table")
    df = scores.loc[:, [benchmark, model, score]].copy()
    df[score] = pd.to_numeric(df[score], errors="raise").astype(np.float64)
    df = df.loc[df[score].notna()]
    dup = df.duplicated([benchmark, model], keep=False)
    if dup.any():
        bad = df.loc[dup, [benchmark, model]].drop_duplicates()
        raise ValueError(
            f"duplicate ({benchmark}, {model}) rows: "
            f"{examples(list(bad.itertuples(index=False, name=None)))}"
        )
    g = df.groupby(benchmark, sort=False)[score]
    n = g.transform("size").astype(np.float64)
    # Average rank (1 = worst) counts each tie as half a win: rank - 1 = #worse + (#tied-1)/2.
    rank = g.rank(method="average", ascending=higher_is_better)
    df["win_rate"] = (rank - 1.0) / (n - 1.0)
    df = df.loc[n >= 2]
    return df.rename(columns={benchmark: "benchmark", model: "model", score: "score"})


def helm_win_rates(
    scores: pd.DataFrame,
    *,
    benchmark: str = "benchmark",
    model: str = "model",
    score: str = "score",
    higher_is_better: bool = True,
) -> pd.DataFrame:
    """HELM mean win rate per model: columns model, win_rate, n_benchmarks, sorted by win rate
    (descending) then model. Models never comparable (only in single-model benchmarks) are
    omitted, as HELM reports None for them."""
    per = per_benchmark_win_rates(
        scores, benchmark=benchmark, model=model, score=score, higher_is_better=higher_is_better
    )
    out = (
        per.groupby("model", sort=True)["win_rate"]
        .agg(win_rate="mean", n_benchmarks="size")
        .reset_index()
    )
    return out.sort_values(
        ["win_rate", "model"], ascending=[False, True], kind="stable"
    ).reset_index(drop=True)
