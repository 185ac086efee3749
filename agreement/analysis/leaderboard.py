"""The leaderboard: mean clinician and jury scores per model, HELM win rates with either
score, and what the jury cost."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from agreement.analysis.plot_data import item_scores
from agreement.stats import helm_win_rates, per_benchmark_win_rates


@dataclass(frozen=True)
class Leaderboard:
    by_model: pd.DataFrame
    by_model_category: pd.DataFrame
    win_rates_by_benchmark: pd.DataFrame
    cost_by_judge: pd.DataFrame
    notes: dict[str, str]


COST_NOTES = {
    "cost_per_item": (
        "jury cost billed: sum of JudgeCall.cost over calls that reached a provider with known "
        "token usage (cache hits cost nothing), divided by the items with such calls"
    ),
    "cost_estimate_per_item": (
        "MedHELM-style estimate: input tokens + the judge's maximum output tokens "
        "(params.max_tokens, default 1024) at the judge's list prices, over the same calls, "
        "divided by the same items (an upper bound on the billed cost)"
    ),
    "scope": ("jury calls only: the evaluated models' own generation cost is not recorded here"),
    "win_rate": (
        "HELM mean win rate: per benchmark, the share of other models with a lower mean "
        "composite (ties half), averaged over benchmarks; jury: all items the jury scored; "
        "clinician: items rated by clinicians (mean of the clinicians' composites)"
    ),
}


def _win_rates(scores: pd.DataFrame, column: str, kind: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    per = (
        scores.loc[scores[column].notna()]
        .groupby(["benchmark", "model"], sort=True)[column]
        .mean()
        .rename("score")
        .reset_index()
    )
    if per.empty:
        empty = pd.DataFrame(columns=["model", f"win_rate_{kind}", f"n_benchmarks_{kind}"])
        return empty, pd.DataFrame(
            columns=["benchmark", "model", "score", "win_rate", "score_kind"]
        )
    mean = helm_win_rates(per).rename(
        columns={"win_rate": f"win_rate_{kind}", "n_benchmarks": f"n_benchmarks_{kind}"}
    )
    by_bench = per_benchmark_win_rates(per).assign(score_kind=kind)
    return mean, by_bench


COST_BY_MODEL_COLUMNS = ("model", "n_items_costed", "cost_per_item", "cost_estimate_per_item")
COST_BY_JUDGE_COLUMNS = (
    "judge",
    "n_calls",
    "n_calls_costed",
    "input_tokens",
    "output_tokens",
    "cost",
    "cost_estimate",
)


def _costs(calls: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per model, per judge) billed cost and MedHELM estimate over calls with known tokens."""
    cols_model, cols_judge = list(COST_BY_MODEL_COLUMNS), list(COST_BY_JUDGE_COLUMNS)
    if calls.empty:
        return pd.DataFrame(columns=cols_model), pd.DataFrame(columns=cols_judge)
    c = calls.copy()
    c["costed"] = ~c["cached"] & c["input_tokens"].notna() & c["cost"].notna()
    c["estimate"] = (
        c["input_tokens"] * c["price_input_per_mtok"]
        + c["max_output_tokens"] * c["price_output_per_mtok"]
    ) / 1e6
    costed = c.loc[c["costed"]]
    by_model = costed.groupby("model").agg(
        n_items_costed=("item", "nunique"), cost=("cost", "sum"), estimate=("estimate", "sum")
    )
    by_model["cost_per_item"] = by_model["cost"] / by_model["n_items_costed"]
    by_model["cost_estimate_per_item"] = by_model["estimate"] / by_model["n_items_costed"]
    by_judge = c.groupby("judge").agg(n_calls=("item", "size"))
    by_judge = by_judge.join(
        costed.groupby("judge").agg(
            n_calls_costed=("item", "size"),
            input_tokens=("input_tokens", "sum"),
            output_tokens=("output_tokens", "sum"),
            cost=("cost", "sum"),
            cost_estimate=("estimate", "sum"),
        )
    )
    by_judge["n_calls_costed"] = by_judge["n_calls_costed"].fillna(0).astype(int)
    return by_model.reset_index()[cols_model], by_judge.reset_index()[cols_judge]


def leaderboard(table: pd.DataFrame, calls_cost: pd.DataFrame) -> Leaderboard:
    """Mean clinician and jury scores per model and per model x category (raw scale), HELM
    win rates with the jury and with the clinician composite, and jury cost per item."""
    scores = item_scores(table)
    agg = {
        "n_items_clinician": ("clinician_mean", "count"),
        "clinician_mean": ("clinician_mean", "mean"),
        "n_items_jury": ("jury", "count"),
        "jury_mean": ("jury", "mean"),
    }
    by_model = scores.groupby("model", sort=True).agg(**agg).reset_index()
    by_cat = scores.groupby(["model", "category"], sort=True).agg(**agg).reset_index()
    wr_jury, bench_jury = _win_rates(scores, "jury", "jury")
    wr_clin, bench_clin = _win_rates(scores, "clinician_mean", "clinician")
    cost_model, cost_judge = _costs(calls_cost)
    by_model = (
        by_model.merge(wr_jury, on="model", how="left")
        .merge(wr_clin, on="model", how="left")
        .merge(cost_model, on="model", how="left")
    )
    by_model = by_model.sort_values(
        ["win_rate_jury", "model"], ascending=[False, True], na_position="last", kind="stable"
    ).reset_index(drop=True)
    frames = [f for f in (bench_jury, bench_clin) if not f.empty]
    by_bench = (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=["benchmark", "model", "score", "win_rate", "score_kind"])
    )
    return Leaderboard(
        by_model=by_model,
        by_model_category=by_cat,
        win_rates_by_benchmark=by_bench.loc[
            :, ["score_kind", "benchmark", "model", "score", "win_rate"]
        ],
        cost_by_judge=cost_judge,
        notes=dict(COST_NOTES),
    )
