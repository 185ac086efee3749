"""What BCa's grouped jackknife changes in a report, and what it saves (issue 32).

    .venv/bin/python bench/bench_jackknife_groups.py [--cases 1000] [--resamples 1000]

Above ``agreement.stats.jackknife.JACKKNIFE_GROUPS`` items a cell's acceleration comes from a
jackknife leaving out one of that many random groups of items instead of one item at a time.
On two MedHELM-shaped score tables of ``--cases`` x 3 items (29 clinicians with 2 per item, as
the report bench; 3 clinicians rating every item, where the machine side is BCa too), each
report's analysis (``comparison_table``, one thread) is computed three times: with the
leave-one-out jackknife (the groups switched off), with the groups, and with the groups and
the next seed. Every BCa interval end of the cells with more items than groups is compared:
grouped against leave-one-out (what the groups change), and seed against next seed (the
bootstrap's own Monte Carlo error, which every report already carries), each as a share of
the interval's width. Prints the seconds of each computation and the ratio. No database.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agreement import analysis
from agreement.stats import jackknife
from tests.support.report_cells import JUDGE_WEIGHTS, METRICS, score_table

ENDS = [("ci_low", "ci_high")] + [
    (f"alpha_{level}_ci_low", f"alpha_{level}_ci_high") for level in ("interval", "ordinal")
]


def tables(cases: int) -> dict[str, pd.DataFrame]:
    common = dict(
        cases=cases, models=3, judges=JUDGE_WEIGHTS, metrics=METRICS, categories=5, benchmarks=10
    )
    return {
        "29 clinicians, 2 per item": score_table(
            n_clinicians=29, per_item=(2, 2), seed=16, **common
        ),
        "3 clinicians, every item": score_table(n_clinicians=3, per_item=(3, 3), seed=17, **common),
    }


def computed(table: pd.DataFrame, *, resamples: int, seed: int, groups: int) -> tuple:
    jackknife.JACKKNIFE_GROUPS = groups
    started = time.perf_counter()
    comp = analysis.comparison_table(
        table, n_resamples=resamples, seed=seed, judge_weights=JUDGE_WEIGHTS, workers=1
    )
    return comp.cells, time.perf_counter() - started


def interval_ends(cells: pd.DataFrame, groups: int) -> pd.DataFrame:
    """The interval ends of cells over more items than ``groups``, one row per end, with the
    interval's width: the cell's interval where it is BCa over groups, its alphas' always (the
    ends that no resample moves, such as a Wald interval's, are left out by the caller)."""
    large = cells.loc[cells["n_items"] > groups]
    bca = large["ci_method"].str.contains("groups of items", na=False)
    parts = []
    for low, high in ENDS:
        rows = large.loc[bca] if low == "ci_low" else large
        for end in (low, high):
            part = rows[[low, high]].astype(float)
            parts.append(
                pd.DataFrame({"end": part[end], "width": part[high] - part[low]}, index=part.index)
                .assign(what=end)
                .dropna()
            )
    return pd.concat(parts).set_index("what", append=True)


def shares(a: pd.DataFrame, b: pd.DataFrame) -> np.ndarray:
    both = a.join(b["end"].rename("other"), how="inner")
    return ((both["end"] - both["other"]).abs() / both["width"]).to_numpy()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=1000, help="x 3 models = items")
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--seed", type=int, default=16)
    args = p.parse_args()
    groups = jackknife.JACKKNIFE_GROUPS
    print(f"{args.cases * 3:,} items, {args.resamples:,} resamples, {groups} jackknife groups")
    print(
        "| table | leave-one-out s | groups s | ratio | interval ends | grouped vs leave-one-out:"
        " median, 95th pct, max share of width | seed vs next seed: median, 95th pct, max |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, table in tables(args.cases).items():
        exact, exact_s = computed(table, resamples=args.resamples, seed=args.seed, groups=10**9)
        grouped, grouped_s = computed(
            table, resamples=args.resamples, seed=args.seed, groups=groups
        )
        other, _ = computed(table, resamples=args.resamples, seed=args.seed + 1, groups=groups)
        # the leave-one-out cells, located where the grouped cells are (same rows and columns)
        exact_ends = interval_ends(exact.assign(ci_method=grouped["ci_method"]), groups)
        grouped_ends = interval_ends(grouped, groups)
        other_ends = interval_ends(other, groups)
        # only the ends a resample moves (a Wald interval's do not)
        moved = shares(grouped_ends, other_ends) > 0
        grouped_ends = grouped_ends.loc[moved]
        change = shares(grouped_ends, exact_ends)
        noise = shares(grouped_ends, other_ends)

        def q(x: np.ndarray) -> str:
            if not x.size:
                return "-"
            return ", ".join(f"{v:.2%}" for v in np.quantile(x, [0.5, 0.95, 1.0]))

        print(
            f"| {name} | {exact_s:.1f} | {grouped_s:.1f} | {exact_s / grouped_s:.2f}x | "
            f"{change.size} | {q(change)} | {q(noise)} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
