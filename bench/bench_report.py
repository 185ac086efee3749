"""Time of one report's analyses (agreement.analysis.comparison_table) on a demo-sized score
table, the way `compute_report` runs them, with no database.

    .venv/bin/python bench/bench_report.py [--resamples 1000] [--repeats 3] [--scale 1]

The table is the demo's shape: 16 cases x 3 models = 48 items, 4 clinicians rating 2-4 of
them per item on 3 criteria (1-5), one judge, the jury and two metrics (ROUGE-L, BERTScore
F1 on 0-1); --scale multiplies the cases. Prints the best wall and CPU time of --repeats runs
(CPU time is the steadier figure on a shared machine; BLAS threads add to it); the
figures before and after a change are recorded in bench/README.md (run both on the same
machine at about the same time).
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

CRITERIA = ("accuracy", "completeness", "clarity")
MODELS = ("strong", "partial", "weak")
CATEGORIES = ("Clinical Decision Support", "Clinical Note Generation", "Administration")
BENCHMARKS = ("MedCalc", "MEDIQA", "ACI-Bench", "MTSamples")


def demo_table(scale: int, seed: int = 2025) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    quality = {"strong": 4.3, "partial": 3.4, "weak": 2.2}
    lenient = rng.normal(scale=0.3, size=4)
    for case in range(16 * scale):
        effect = rng.normal(scale=0.35)
        attrs = (BENCHMARKS[case % 4], CATEGORIES[case % 3])
        for model in MODELS:
            item = f"c{case}-{model}"
            latent = quality[model] + effect
            raters = rng.choice(4, size=int(rng.integers(2, 5)), replace=False)
            for r in raters:
                for c in CRITERIA:
                    v = np.clip(np.round(latent + lenient[r] + rng.normal(scale=0.55)), 1, 5)
                    rows.append((item, c, f"clinician{r + 1}", "clinician", v, model, *attrs))
            for c in CRITERIA:
                v = float(np.clip(np.round(latent + rng.normal(scale=0.7)), 1, 5))
                rows.append((item, c, "judge-135m", "judge", v, model, *attrs))
                rows.append((item, c, "jury", "jury", v, model, *attrs))
            for metric, noise in (("ROUGE-L", 0.15), ("BERTScore-F1", 0.08)):
                v = float(np.clip(latent / 6 + rng.normal(scale=noise), 0, 1))
                rows.append((item, "overall", metric, "metric", v, model, *attrs))
    return pd.DataFrame(
        rows,
        columns=[
            "item",
            "criterion",
            "rater",
            "rater_kind",
            "value",
            "model",
            "benchmark",
            "category",
        ],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scale", type=int, default=1)
    args = parser.parse_args()
    table = demo_table(args.scale)
    best, best_cpu = float("inf"), float("inf")
    for _ in range(args.repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        comparison = analysis.comparison_table(table, n_resamples=args.resamples, seed=0)
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    print(
        f"items {table['item'].nunique()}, cells {len(comparison.cells)}, "
        f"resamples {args.resamples}: best of {args.repeats} {best:.3f} s wall, "
        f"{best_cpu:.3f} s CPU"
    )


if __name__ == "__main__":
    main()
