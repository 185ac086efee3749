"""Study analyses on the long score table: MedHELM's Table 2, per criterion, differences and
the leaderboard. No Django: pandas in, pandas out; every statistic comes from agreement.stats.

Table 2 (:func:`comparison_table`)
---------------------------------
Rows: all items, each taxonomy category, each benchmark (categories and benchmarks each
partition the items). Columns: the jury, each judge, each metric, clinician-clinician.
- A machine cell is MedHELM's machine-vs-clinicians ICC(3,k), k = 2, on within-rater
  z-scored composites (:func:`agreement.stats.machine_vs_clinicians`).
- The clinician-clinician cell is the plain mean of ICC(3,2) over clinician pairs sharing at
  least ``min_shared_items`` items (:func:`agreement.stats.clinician_pairwise`).
- Each row is analysed on its own: the stats functions get the rows of the table for the
  row's items, so z-scores are within rater *over that subset* (a category's row is what
  MedHELM's analysis would give on that category alone).
- Intervals: item bootstrap (BCa by default, percentile on request) with the report's seed.
  Every cell draws its resamples from the same seed, so a cell is reproducible on its own and
  cells over the same items share their resamples.
- A clinician whose z-score is undefined on a subset (fewer than 2 items or constant) is left
  out of that cell and named in ``dropped_raters``; a cell with too little data says why in
  ``reason`` and has no estimate.

Per criterion: the same columns on the rows of one criterion. A metric has one "overall"
value per item, so its per-criterion cell compares that value with the clinicians' scores on
the criterion (the metric's composite is its overall value in every criterion's analysis).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from agreement.stats import (
    bootstrap_clinician_pairwise,
    bootstrap_machine_minus_clinicians,
    bootstrap_machine_vs_clinicians,
    clinician_pairwise,
    composite_scores,
    helm_win_rates,
    koo_li_band,
    koo_li_interval_band,
    machine_vs_clinicians,
    per_benchmark_win_rates,
)

ROW_ALL = "All items"
CLINICIAN_COLUMN = "clinician-clinician"
MACHINE_FORM = "ICC(3,k) k=2 on within-rater z-scored composites (MedHELM)"
PAIRWISE_FORM = "mean over clinician pairs of ICC(3,2) on within-rater z-scored composites"
PAIRWISE_RULE = (
    "every pair of clinicians sharing >= {n} items; ICC(3,2) on their z-scores over the "
    "shared items; plain unweighted mean over pairs (pairs with no variation left out)"
)
DIFFERENCE_FORM = "machine ICC(3,2) minus clinician-clinician mean ICC(3,2), same resamples"
CI_METHODS = {"bca": "bootstrap over items, BCa", "percentile": "bootstrap over items, percentile"}
_KIND_ORDER = {"jury": 0, "judge": 1, "metric": 2}

CELL_COLUMNS = [
    "section",
    "row_group",
    "row",
    "column_kind",
    "column",
    "statistic",
    "estimate",
    "ci_low",
    "ci_high",
    "ci_method",
    "confidence",
    "n_items",
    "n_raters",
    "n_pairs",
    "n_resamples",
    "n_valid_resamples",
    "band",
    "point_band",
    "status",
    "reason",
    "dropped_raters",
]
DIFFERENCE_COLUMNS = [
    "row_group",
    "row",
    "column_kind",
    "column",
    "estimate",
    "ci_low",
    "ci_high",
    "machine_icc",
    "clinician_icc",
    "n_items",
    "n_valid_resamples",
    "status",
    "reason",
]


@dataclass(frozen=True)
class Settings:
    """What a comparison is computed with (all recorded in a report's method)."""

    n_resamples: int = 1000
    seed: int = 0
    confidence: float = 0.95
    method: str = "bca"
    min_items: int = 3
    min_shared_items: int = 2

    def __post_init__(self) -> None:
        if self.method not in CI_METHODS:
            raise ValueError(f"method must be one of {sorted(CI_METHODS)}, got {self.method!r}")
        if self.min_items < 2:
            raise ValueError("min_items must be >= 2")

    def boot(self) -> dict[str, Any]:
        return {
            "n_resamples": self.n_resamples,
            "confidence": self.confidence,
            "method": self.method,
            "seed": self.seed,
        }


@dataclass(frozen=True)
class Comparison:
    cells: pd.DataFrame  # CELL_COLUMNS; section "overall" (Table 2) and "criterion"
    differences: pd.DataFrame  # DIFFERENCE_COLUMNS
    rows: list[dict[str, str]]  # {row_group, row} in display order
    columns: list[dict[str, str]]  # {column_kind, column} in display order
    criteria: list[str]
    settings: Settings = field(repr=False)


# --------------------------------------------------------------------------------------------
# Rows and columns


def machine_columns(table: pd.DataFrame) -> list[tuple[str, str]]:
    """(kind, rater) of every machine rater: the jury, judges, metrics, each sorted by name."""
    pairs = table.loc[table["rater_kind"] != "clinician", ["rater_kind", "rater"]]
    unique = pairs.drop_duplicates().itertuples(index=False, name=None)
    return sorted(unique, key=lambda p: (_KIND_ORDER[p[0]], str(p[1])))


def row_subsets(table: pd.DataFrame) -> list[tuple[str, str, np.ndarray]]:
    """(row_group, row, item ids): all items, then each category, then each benchmark."""
    out = [("all", ROW_ALL, np.sort(table["item"].unique()))]
    for group in ("category", "benchmark"):
        for label, items in table.groupby(group, sort=True)["item"]:
            out.append((group, str(label), np.sort(items.unique())))
    return out


def criteria_of(table: pd.DataFrame) -> list[str]:
    """Clinician criteria in order of first appearance."""
    clin = table.loc[table["rater_kind"] == "clinician", "criterion"]
    return list(dict.fromkeys(clin))


def criterion_subset(table: pd.DataFrame, criterion: str) -> pd.DataFrame:
    """The rows of one criterion, plus every metric row (a metric's one overall value)."""
    keep = (table["criterion"] == criterion) | (table["rater_kind"] == "metric")
    return table.loc[keep]


# --------------------------------------------------------------------------------------------
# Cells


def _finite(x: float) -> bool:
    return x is not None and bool(np.isfinite(x))


def _cell(**values: Any) -> dict[str, Any]:
    row = dict.fromkeys(CELL_COLUMNS)
    row.update(values)
    return row


def _result_fields(boot: Any, s: Settings) -> dict[str, Any]:
    lo, hi = boot.ci_low, boot.ci_high
    ok = _finite(lo) and _finite(hi)
    return {
        "estimate": boot.estimate,
        "ci_low": lo if ok else None,
        "ci_high": hi if ok else None,
        "ci_method": CI_METHODS[s.method],
        "confidence": s.confidence,
        "n_resamples": s.n_resamples,
        "n_valid_resamples": boot.n_valid,
        "band": koo_li_interval_band(lo, hi) if ok else "undefined",
        "point_band": koo_li_band(boot.estimate),
        "status": "ok",
        "reason": None
        if ok
        else f"bootstrap interval undefined ({boot.n_valid} of {s.n_resamples} resamples valid)",
    }


def _insufficient(reason: str) -> dict[str, Any]:
    return {"status": "insufficient", "reason": reason, "band": "undefined"}


def _items_with(sub: pd.DataFrame, **where: str) -> set:
    mask = np.ones(len(sub), dtype=bool)
    for col, value in where.items():
        mask &= (sub[col] == value).to_numpy()
    return set(sub.loc[mask, "item"])


def _only(sub: pd.DataFrame, machine: str) -> pd.DataFrame:
    """The clinicians' rows and one machine's: all a machine cell reads (same result as the
    whole table, less to standardise)."""
    return sub.loc[(sub["rater_kind"] == "clinician") | (sub["rater"] == machine)]


def machine_cell(sub: pd.DataFrame, machine: str, s: Settings) -> dict[str, Any]:
    """Estimate, interval, counts (or the reason there are none) for one machine."""
    sub = _only(sub, machine)
    clin_items = _items_with(sub, rater_kind="clinician")
    machine_items = _items_with(sub, rater=machine)
    both = len(clin_items & machine_items)
    if not machine_items:
        return _insufficient(f"no scores from {machine} on these items")
    if both < s.min_items:
        return _insufficient(
            f"fewer than {s.min_items} items with clinician ratings and {machine} scores ({both})"
        )
    try:
        point = machine_vs_clinicians(sub, machine=machine, on_degenerate="drop")
        if point.n_items < s.min_items:
            return _insufficient(
                f"fewer than {s.min_items} items left after dropping clinicians with no "
                f"z-score ({point.n_items})"
            )
        boot = bootstrap_machine_vs_clinicians(
            sub, machine=machine, on_degenerate="drop", **s.boot()
        )
    except ValueError as exc:
        return _insufficient(str(exc))
    return {
        **_result_fields(boot, s),
        "n_items": point.n_items,
        "n_raters": point.n_clinicians,
        "dropped_raters": ", ".join(map(str, point.dropped_raters)) or None,
    }


def clinician_cell(sub: pd.DataFrame, s: Settings) -> dict[str, Any]:
    """Mean pairwise clinician ICC(3,2) with its interval (or the reason there is none)."""
    clin = sub.loc[sub["rater_kind"] == "clinician"]
    per_item = clin.groupby("item")["rater"].nunique()
    shared = int((per_item >= 2).sum())
    if shared < s.min_items:
        return _insufficient(
            f"fewer than {s.min_items} items rated by 2 or more clinicians ({shared})"
        )
    try:
        point = clinician_pairwise(clin, min_shared_items=s.min_shared_items, on_degenerate="drop")
        boot = bootstrap_clinician_pairwise(
            clin, min_shared_items=s.min_shared_items, on_degenerate="drop", **s.boot()
        )
    except ValueError as exc:
        return _insufficient(str(exc))
    return {
        **_result_fields(boot, s),
        "n_items": point.n_items,
        "n_raters": point.n_clinicians,
        "n_pairs": point.n_pairs,
        "dropped_raters": ", ".join(map(str, point.dropped_raters)) or None,
    }


def _row_cells(
    sub: pd.DataFrame, *, section: str, group: str, row: str, machines: list, s: Settings
) -> list[dict[str, Any]]:
    out = []
    for kind, rater in machines:
        out.append(
            _cell(
                section=section,
                row_group=group,
                row=row,
                column_kind=kind,
                column=rater,
                statistic=MACHINE_FORM,
                **machine_cell(sub, rater, s),
            )
        )
    out.append(
        _cell(
            section=section,
            row_group=group,
            row=row,
            column_kind="clinician",
            column=CLINICIAN_COLUMN,
            statistic=PAIRWISE_FORM,
            **clinician_cell(sub, s),
        )
    )
    return out


def difference_cell(sub: pd.DataFrame, machine: str, s: Settings) -> dict[str, Any]:
    """(machine ICC) - (clinician-clinician ICC) on the same item resamples."""
    try:
        boot = bootstrap_machine_minus_clinicians(
            _only(sub, machine),
            machine=machine,
            min_shared_items=s.min_shared_items,
            on_degenerate="drop",
            **s.boot(),
        )
    except ValueError as exc:
        return {"status": "insufficient", "reason": str(exc)}
    fields = _result_fields(boot, s)
    return {
        "estimate": boot.estimate,
        "ci_low": fields["ci_low"],
        "ci_high": fields["ci_high"],
        "n_items": boot.n_items,
        "n_valid_resamples": boot.n_valid,
        "status": "ok",
        "reason": fields["reason"],
    }


_COUNT_COLUMNS = ("n_items", "n_raters", "n_pairs", "n_resamples", "n_valid_resamples")


def _counts_as_int(frame: pd.DataFrame) -> pd.DataFrame:
    """Counts stay whole numbers where some cells have none (nullable Int64, not float)."""
    for col in _COUNT_COLUMNS:
        if col in frame:
            frame[col] = frame[col].astype("Int64")
    return frame


def comparison_table(
    table: pd.DataFrame,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    method: str = "bca",
    min_items: int = 3,
    min_shared_items: int = 2,
) -> Comparison:
    """MedHELM Table 2 on every row subset, per criterion, and the differences (see module
    docstring). Differences: the jury on every row; every machine on all items."""
    s = Settings(
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        method=method,
        min_items=min_items,
        min_shared_items=min_shared_items,
    )
    machines = machine_columns(table)
    subsets = row_subsets(table)
    cells: list[dict[str, Any]] = []
    diffs: list[dict[str, Any]] = []
    by_cell: dict[tuple[str, str, str], dict[str, Any]] = {}
    for group, row, items in subsets:
        sub = table.loc[table["item"].isin(items)]
        row_cells = _row_cells(sub, section="overall", group=group, row=row, machines=machines, s=s)
        cells.extend(row_cells)
        by_cell.update({(group, row, c["column"]): c for c in row_cells})
        targets = machines if group == "all" else [m for m in machines if m[0] == "jury"]
        for kind, rater in targets:
            m_cell = by_cell[(group, row, rater)]
            c_cell = by_cell[(group, row, CLINICIAN_COLUMN)]
            base = {"row_group": group, "row": row, "column_kind": kind, "column": rater}
            if m_cell["status"] != "ok" or c_cell["status"] != "ok":
                bad = m_cell if m_cell["status"] != "ok" else c_cell
                result = {"status": "insufficient", "reason": f"{bad['column']}: {bad['reason']}"}
            else:
                result = difference_cell(sub, rater, s)
            diffs.append(
                {
                    **dict.fromkeys(DIFFERENCE_COLUMNS),
                    **base,
                    "machine_icc": m_cell.get("estimate"),
                    "clinician_icc": c_cell.get("estimate"),
                    **result,
                }
            )
    criteria = criteria_of(table)
    for criterion in criteria:
        sub = criterion_subset(table, criterion)
        cells.extend(
            _row_cells(
                sub, section="criterion", group="criterion", row=criterion, machines=machines, s=s
            )
        )
    return Comparison(
        cells=_counts_as_int(pd.DataFrame(cells, columns=CELL_COLUMNS)),
        differences=_counts_as_int(pd.DataFrame(diffs, columns=DIFFERENCE_COLUMNS)),
        rows=[{"row_group": g, "row": r} for g, r, _ in subsets],
        columns=[{"column_kind": k, "column": r} for k, r in machines]
        + [{"column_kind": "clinician", "column": CLINICIAN_COLUMN}],
        criteria=criteria,
        settings=s,
    )


# --------------------------------------------------------------------------------------------
# Per-item scores, plot data, leaderboard


def item_scores(table: pd.DataFrame) -> pd.DataFrame:
    """Per item: model, benchmark, category, clinician mean composite (raw scale) and how
    many clinicians, the jury composite (raw scale). Items with neither are left out."""
    comp = composite_scores(table)
    clin = (
        comp.loc[comp["rater_kind"] == "clinician"]
        .groupby("item")["composite"]
        .agg(clinician_mean="mean", n_clinicians="size")
    )
    jury = comp.loc[comp["rater_kind"] == "jury"].set_index("item")["composite"].rename("jury")
    attrs = table.drop_duplicates("item").set_index("item")[["model", "benchmark", "category"]]
    out = attrs.join(clin, how="left").join(jury, how="left")
    out = out.loc[out["clinician_mean"].notna() | out["jury"].notna()]
    out["n_clinicians"] = out["n_clinicians"].fillna(0).astype(int)
    return out.reset_index()


def plot_data(table: pd.DataFrame, *, min_shared_items: int = 2) -> dict[str, Any]:
    """What the report's plots need, computed once and stored with the snapshot."""
    scores = item_scores(table)
    z = pd.DataFrame(columns=["item", "clinician_z", "machine_z"])
    z_note = None
    if (table["rater_kind"] == "jury").any():
        try:
            z = machine_vs_clinicians(table, machine="jury", on_degenerate="drop").table
        except ValueError as exc:
            z_note = str(exc)
    else:
        z_note = "no jury scores"
    items = scores.merge(z[["item", "clinician_z", "machine_z"]], on="item", how="left")
    items = items.rename(columns={"machine_z": "jury_z"})
    pairs = pd.DataFrame(columns=["rater_a", "rater_b", "n_shared", "icc"])
    pairs_note = None
    clin = table.loc[table["rater_kind"] == "clinician"]
    if not clin.empty:
        try:
            pairs = clinician_pairwise(
                clin, min_shared_items=min_shared_items, on_degenerate="drop"
            ).pairs
        except ValueError as exc:
            pairs_note = str(exc)
    return {
        "items": items.to_dict("records"),
        "z_note": z_note,
        "clinicians": sorted(clin["rater"].unique().tolist()),
        "pairs": pairs.to_dict("records"),
        "pairs_note": pairs_note,
    }


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


def _costs(calls: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per model, per judge) billed cost and MedHELM estimate over calls with known tokens."""
    cols_model = ["model", "n_items_costed", "cost_per_item", "cost_estimate_per_item"]
    cols_judge = [
        "judge", "n_calls", "n_calls_costed", "input_tokens", "output_tokens", "cost",
        "cost_estimate",
    ]  # fmt: skip
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
