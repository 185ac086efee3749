"""Runtime of the planning simulation (agreement.stats.planning_sim.simulate_design) per
simulated study, for each estimator it uses, as a ratio to a named baseline: one bare call of
the study's estimator on data of the same shape (drawing included), i.e. what the simulation
costs beyond the estimator itself.

    .venv/bin/python bench/bench_plan.py [--studies 300] [--items 100] [--repeats 3]

Designs: complete (k = R = 3, ICC(A,1) through agreement.stats.icc), incomplete (3 of 9
raters per item, ICC(1,1) through icc_oneway_unbalanced) and MedHELM's clinician pairs (2 of
4 raters per item, clinician_pairwise). Best of --repeats; CPU time beside wall time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agreement.stats.icc import icc
from agreement.stats.icc_oneway import icc_oneway_unbalanced
from agreement.stats.medhelm import clinician_pairwise
from agreement.stats.planning_sim import DesignSpec, simulate_design


def _baseline(kind: str, n: int, k: int, r: int, rng: np.random.Generator) -> None:
    items = rng.normal(0, 1, n)
    if kind == "complete":
        icc(items[:, None] + rng.normal(0, 1, (n, k))).get("ICC(A,1)")
        return
    who = np.argsort(rng.random((n, r)), axis=1)[:, :k]
    values = items[:, None] + rng.normal(0, 1, (n, k))
    table = pd.DataFrame(
        {"item": np.repeat(np.arange(n), k), "rater": who.ravel(), "value": values.ravel()}
    )
    if kind == "incomplete":
        icc_oneway_unbalanced(table)
    else:
        table["criterion"], table["rater_kind"] = "composite", "clinician"
        clinician_pairwise(table, on_degenerate="drop")


def _best(fn, repeats: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return min(walls), min(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=300)
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    designs = [
        ("complete", 3, 3, "ICC(A,1)"),
        ("incomplete", 3, 9, "ICC(1,1)"),
        ("medhelm pairs", 2, 4, "MedHELM pairs"),
    ]
    print(f"{args.studies} studies of {args.items} items; best of {args.repeats}")
    print(f"{'design':<15}{'ms/study':>10}{'baseline ms':>13}{'ratio':>8}{'cpu ms/study':>14}")
    for kind, k, r, form in designs:
        spec = DesignSpec(1.0, 0.3, 0.8, args.items, k, r, form=form, n_studies=args.studies)
        wall, cpu = _best(lambda spec=spec: simulate_design(spec), args.repeats)
        rng = np.random.default_rng(0)
        base_kind = kind.split()[0] if kind != "medhelm pairs" else "pairs"

        def base(base_kind=base_kind, k=k, r=r, rng=rng) -> None:
            for _ in range(args.studies):
                _baseline(base_kind, args.items, k, r, rng)

        base_wall, _ = _best(base, args.repeats)
        per, per_base = 1000 * wall / args.studies, 1000 * base_wall / args.studies
        print(
            f"{kind:<15}{per:>10.3f}{per_base:>13.3f}{per / per_base:>8.2f}"
            f"{1000 * cpu / args.studies:>14.3f}"
        )


if __name__ == "__main__":
    main()
