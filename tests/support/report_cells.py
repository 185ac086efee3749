"""Seeded score tables of every design a report meets, and the numbers a report gives on
them, as plain JSON: what tests/agreement/test_report_numbers.py holds every later version of
the report's analyses to (1e-12), so that making the report faster changes no number.

    .venv/bin/python -m tests.support.report_cells   # rewrites tests/agreement/data/report_cells.json

Run it only from a commit whose numbers are the reference (it was generated at main ab96020,
before issue 32's speed work): regenerating it from changed code would pin the change. It was
regenerated once since, at main 5d830d0 with only the exact-fit rule of
agreement.stats.icc_twoway_incomplete.fit_from_weights added (an error sum of squares at
rounding level counts as zero): resamples whose two-way fit is exact had been valid or not by
the CPU's rounding (valid where the file was made, invalid on an AMD EPYC), so the medhelm
case's small benchmark rows moved (valid resamples 200 -> 199 and their intervals) and no
other case.

The tables (no database: the long score table as agreement.selectors builds it):
- "demo": the demo's shape, 16 cases x 3 models, 4 clinicians rating 2-4 of them per item,
  one judge (so the jury is that judge), two metrics: an incomplete design whose pairs share
  fewer than 100 items, so the two-way clinician form and the fitted machine side;
- "medhelm": the MedHELM bench's shape, small: 60 cases x 3 models in 5 categories and 10
  benchmarks, 2 of 10 clinicians per item, 3 judges with weights, the jury, ROUGE-L and
  BERTScore: the two-way form, the fitted machine side, leave-one-judge-out juries, rows too
  small for a statistic;
- "complete": 3 clinicians rating every one of 40 items, 2 judges and the jury, a metric:
  MedHELM's pair mean and z-scored machine side, BCa;
- "shared": 3 clinicians, 2 or 3 per item on 240 items (every pair shares 100 or more): the
  pair mean on an incomplete design.
Cases ("case" = table + settings) add the percentile interval and each requestable form.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agreement import analysis

DATA_FILE = Path(__file__).resolve().parents[1] / "agreement" / "data" / "report_cells.json"
COLUMNS = ("item", "criterion", "rater", "rater_kind", "value", "model", "benchmark", "category")
CRITERIA = ("accuracy", "completeness", "clarity")
RESAMPLES = 200
REPORT_SEED = 7


def _rows_for_item(
    rng: np.random.Generator,
    *,
    item: int,
    latent: float,
    clinicians: list[int],
    lenient: np.ndarray,
    judges: dict[str, float],
    metrics: dict[str, tuple[float, float, float]],
    attrs: tuple[str, str, str],
) -> list[tuple]:
    """One item's rows: each clinician's and judge's criteria on 1-5, the jury as the judges'
    weighted mean, each metric's one overall value."""
    rows = []
    for r in clinicians:
        for n, c in enumerate(CRITERIA):
            v = float(np.clip(np.round(latent + lenient[r] + 0.1 * n + rng.normal(0, 0.6)), 1, 5))
            rows.append((item, c, f"clin-{r:02d}", "clinician", v, *attrs))
    jury: dict[str, list[float]] = {c: [0.0, 0.0] for c in CRITERIA}
    for j, (name, weight) in enumerate(judges.items()):
        for c in CRITERIA:
            v = float(np.clip(np.round(latent + 0.2 * (j - 1) + rng.normal(0, 0.6)), 1, 5))
            rows.append((item, c, name, "judge", v, *attrs))
            jury[c][0] += weight * v
            jury[c][1] += weight
    if judges:
        rows += [(item, c, "jury", "jury", s / w, *attrs) for c, (s, w) in jury.items()]
    for name, (base, slope, noise) in metrics.items():
        v = float(np.clip(base + slope * latent + rng.normal(0, noise), 0, 1))
        rows.append((item, "overall", name, "metric", v, *attrs))
    return rows


def _table(rows: list[tuple]) -> pd.DataFrame:
    table = pd.DataFrame(rows, columns=list(COLUMNS)).astype({"item": "int64", "value": "float64"})
    return table.sort_values(["item", "criterion", "rater"], kind="stable").reset_index(drop=True)


def score_table(
    *,
    cases: int,
    models: int,
    n_clinicians: int,
    per_item: tuple[int, int],
    judges: dict[str, float],
    metrics: dict[str, tuple[float, float, float]],
    categories: int,
    benchmarks: int,
    seed: int,
) -> pd.DataFrame:
    """A long score table (selectors.TABLE_COLUMNS): ``cases`` x ``models`` items, each rated
    by ``per_item`` (low, high inclusive) of ``n_clinicians`` clinicians drawn at random."""
    rng = np.random.default_rng(seed)
    lenient = rng.normal(0, 0.3, size=n_clinicians)
    rows: list[tuple] = []
    for case in range(cases):
        effect = rng.normal(3.0, 0.8)
        bench = case % benchmarks
        for m in range(models):
            item = 1000 + case * models + m
            k = int(rng.integers(per_item[0], per_item[1] + 1))
            clinicians = sorted(rng.choice(n_clinicians, size=k, replace=False).tolist())
            attrs = (f"model-{m}", f"bench-{bench:02d}", f"category-{bench % categories}")
            rows += _rows_for_item(
                rng,
                item=item,
                latent=effect + 0.4 * (1 - m),
                clinicians=clinicians,
                lenient=lenient,
                judges=judges,
                metrics=metrics,
                attrs=attrs,
            )
    return _table(rows)


ROUGE = {"rouge_l_f1": (0.1, 0.05, 0.04)}
METRICS = {**ROUGE, "bertscore_f1": (0.7, 0.03, 0.015)}
JUDGE_WEIGHTS = {"judge-a": 1.0, "judge-b": 2.0, "judge-c": 1.0}

TABLES: dict[str, dict[str, Any]] = {
    "demo": dict(
        cases=16,
        models=3,
        n_clinicians=4,
        per_item=(2, 4),
        judges={"judge-135m": 1.0},
        metrics=METRICS,
        categories=3,
        benchmarks=4,
        seed=2025,
    ),
    "medhelm": dict(
        cases=60,
        models=3,
        n_clinicians=10,
        per_item=(2, 2),
        judges=JUDGE_WEIGHTS,
        metrics=METRICS,
        categories=5,
        benchmarks=10,
        seed=16,
    ),
    "complete": dict(
        cases=20,
        models=2,
        n_clinicians=3,
        per_item=(3, 3),
        judges={"judge-a": 1.0, "judge-b": 1.0},
        metrics=ROUGE,
        categories=2,
        benchmarks=3,
        seed=3,
    ),
    "shared": dict(
        cases=80,
        models=3,
        n_clinicians=3,
        per_item=(2, 3),
        judges={"judge-a": 1.0, "judge-b": 1.0},
        metrics=ROUGE,
        categories=2,
        benchmarks=2,
        seed=4,
    ),
}
#: case name -> (table name, comparison_table keyword arguments beyond the common ones)
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "demo": ("demo", {}),
    "medhelm": ("medhelm", {"judge_weights": JUDGE_WEIGHTS}),
    "medhelm_oneway": ("medhelm", {"judge_weights": JUDGE_WEIGHTS, "clinician_form": "oneway_z"}),
    "medhelm_pairwise": (
        "medhelm",
        {"judge_weights": JUDGE_WEIGHTS, "clinician_form": "medhelm_pairwise"},
    ),
    "complete": ("complete", {}),
    "complete_percentile": ("complete", {"method": "percentile"}),
    "complete_twoway": ("complete", {"clinician_form": "twoway_raw"}),
    "shared": ("shared", {}),
}


def table_of(name: str) -> pd.DataFrame:
    return score_table(**TABLES[name])


def compute(case: str, tables: dict[str, pd.DataFrame] | None = None) -> analysis.Comparison:
    """The comparison of one case, as a report computes it."""
    table_name, extra = CASES[case]
    table = tables[table_name] if tables is not None else table_of(table_name)
    return analysis.comparison_table(table, n_resamples=RESAMPLES, seed=REPORT_SEED, **extra)


def plain(value: Any) -> Any:
    """JSON values that keep every bit: floats as floats (json writes the shortest repr that
    reads back to the same double), NaN and infinities as strings, missing as None."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, pd.DataFrame):
        return plain(value.to_dict("records"))
    if value is None or value is pd.NA:
        return None
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        f = float(value)
        return f if math.isfinite(f) else repr(f)
    return value


def numbers_of(comparison: analysis.Comparison) -> dict[str, Any]:
    """Everything a comparison computed, as plain JSON values."""
    return plain(
        {
            "cells": comparison.cells,
            "differences": comparison.differences,
            "jury": comparison.jury,
            "sensitivity": comparison.sensitivity.entries,
        }
    )


def reference() -> dict[str, Any]:
    """Every case's numbers, with what they were computed with."""
    tables = {name: table_of(name) for name in TABLES}
    return {
        "resamples": RESAMPLES,
        "seed": REPORT_SEED,
        "cases": {case: numbers_of(compute(case, tables)) for case in CASES},
    }


def main() -> None:
    DATA_FILE.parent.mkdir(parents=True, exist_ok=True)
    DATA_FILE.write_text(json.dumps(reference(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {DATA_FILE}")


if __name__ == "__main__":
    main()
