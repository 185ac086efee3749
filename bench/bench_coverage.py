"""Coverage of every interval the reports print, by simulation (issue 21).

Simulates normal two-way random-effects studies (agreement.stats.simulation: item SD 1,
rater SD 0.3, error SD 1, fresh raters per study; complete designs and an incomplete one
where each item is rated by 2 of 6 raters, and 2 of 29 as in MedHELM's clinician pool) and, per design and interval, prints the share of
studies whose interval covers the true value, the mean width, the nominal level and the Monte
Carlo standard error of the coverage. Every interval is computed by the library's own
functions, so a regression in them shows here.

    .venv/bin/python bench/bench_coverage.py                  # default (about 10 min, 1 core)
    .venv/bin/python bench/bench_coverage.py --jobs 2         # same figures, 2 processes
    .venv/bin/python bench/bench_coverage.py --items 30,50,200,2000 --studies 1000

Intervals:
- ICC(A,1), ICC(C,1), ICC(A,k), ICC(C,k) of the complete matrix: the item bootstrap (BCa and
  percentile, agreement.stats.icc_bootstrap: what the library gave for every form before
  issue 21), the F interval (agreement.stats.icc) and the interval the library now reports
  (agreement.stats.icc_interval, "chosen").
- The MedHELM statistics of Table 2, on within-rater z-scores, with the reports' interval
  (item bootstrap, BCa): the machine's ICC(3,2) against the clinicians' mean, its interval
  alpha, the clinician-pair mean ICC(3,2), the clinicians' interval alpha, and the machine
  minus clinician-pair difference. On an incomplete design the reports now give the
  clinicians ICC(C,2) of the two-way model with the clinicians' offsets fitted, with Wald's
  exact interval (agreement.stats.medhelm.form_choice, issue 21; same true value as the pair
  mean): printed as "report: two-way, Wald exact", beside the one-way ICC(1,2) on z-scores
  with its F interval (issue 16, "before (issue 16)") and the pair mean printed before that
  ("before: ..."); --report-only leaves out the pair mean (slow with 29 clinicians).
  There the machine side now has the clinicians' offsets fitted (agreement.stats.medhelm.
  fitted; issue 21, i21-machine): machine ICC(3,2), machine interval alpha and the difference
  with the item bootstrap percentile interval, fit redone per resample ("report: offsets
  fitted"; BCa on the same resamples beside it, "not chosen"), the clinicians' interval alpha
  as the two-way ICC(C,1) with Wald's interval; the z-scored statistics the reports printed
  before are the "before: z-scores" rows.
- Designs of LARGE_ITEMS items or more run at most --large-studies studies (default 200,
  Monte Carlo error 1.5 points), so a 2,000-item run stays minutes.
The ICC forms are not computed on the incomplete design: the library has no interval for
them there (icc_reml gives the point estimate only), and no report prints one.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agreement.stats import (
    BOUNDS,
    MEDHELM_MIN_SHARED_ITEMS,
    EstimabilityRule,
    bootstrap_clinician_alpha,
    bootstrap_clinician_pairwise,
    bootstrap_machine_minus_clinicians,
    bootstrap_machine_with_alpha,
    icc,
)
from agreement.stats.bootstrap import IccStatistic, bootstrap_ci, bootstrap_cis
from agreement.stats.icc_interval_choice import FORM_INTERVAL, icc_interval
from agreement.stats.medhelm import (
    FITTED_METHOD,
    MACHINE_FITTED,
    ONEWAY,
    TWOWAY,
    ClinicianOneWayStatistic,
    bootstrap_machine_fitted,
    choose_clinician_form,
    clinician_alpha_twoway,
    clinician_oneway,
    clinician_twoway,
)
from agreement.stats.simulation import (
    MACHINE,
    Design,
    Tally,
    score_table,
    simulate_matrix,
    true_values,
)

ICC_FORMS = ("ICC(A,1)", "ICC(C,1)", "ICC(A,k)", "ICC(C,k)")
CONFIDENCE = 0.95
#: From this many items on a design runs --large-studies studies at most (2,000 items x
#: 1,000 resamples per study costs about 20x a 100-item study).
LARGE_ITEMS = 1000
PAIR = "clinician pair mean ICC(3,2)"  # the clinician-clinician column, whatever its form
Row = tuple[str, str, float, float, bool]  # (statistic, interval, low, high, approximate)
#: The reports' default estimability rule (agreement.analysis.Settings): the pair mean and the
#: difference leave out pairs sharing fewer items and pair ICCs outside the bounds.
REPORT_RULE = EstimabilityRule(
    max_ci_width=1.0, min_shared_items=MEDHELM_MIN_SHARED_ITEMS, bounds=BOUNDS
)


def icc_rows(x: np.ndarray, seed: int, n_resamples: int) -> list[Row]:
    """The ICC forms' intervals of one complete study."""
    out: list[Row] = []
    stats = [IccStatistic(x, f) for f in ICC_FORMS]
    boots = bootstrap_cis(stats, n_resamples=n_resamples, confidence=CONFIDENCE, seed=seed)
    table = icc(x, confidence=CONFIDENCE)
    for form, boot in zip(ICC_FORMS, boots, strict=True):
        out.append((form, "item bootstrap BCa", boot.bca_ci[0], boot.bca_ci[1], False))
        out.append(
            (form, "item bootstrap percentile", *boot.percentile_ci, False)  # type: ignore[arg-type]
        )
        f_row = table.get(form)
        out.append((form, "F (McGraw & Wong)", f_row.ci_low, f_row.ci_high, False))
        chosen = icc_interval(x, form=form, n_resamples=n_resamples, seed=seed)
        out.append(
            (form, f"chosen: {chosen.method}", chosen.ci_low, chosen.ci_high, chosen.approximate)
        )
    return out


def medhelm_rows(
    x: np.ndarray, machine: np.ndarray, seed: int, n_resamples: int, report_only: bool = False
) -> list[Row]:
    """The Table 2 statistics' intervals (item bootstrap BCa, as the reports compute them);
    ``report_only`` leaves out what the reports no longer print on an incomplete design (the
    pair mean and its difference, the one-way form's bootstraps): the slow part with 29
    clinicians (406 pairs)."""
    scores = score_table(x, machine)
    kw = {"n_resamples": n_resamples, "confidence": CONFIDENCE, "seed": seed}
    kw_drop = {**kw, "on_degenerate": "drop"}
    out: list[Row] = []
    clin = scores.loc[scores["rater_kind"] == "clinician"]
    by_model = choose_clinician_form(clin).form == TWOWAY
    # on an incomplete design the z-scored statistics are what the reports printed before
    # issue 21's machine side (i21-machine); the fitted ones are what they print now
    zs = "before: z-scores, item bootstrap BCa" if by_model else "report: item bootstrap BCa"
    b = bootstrap_machine_with_alpha(scores, machine=MACHINE, **kw_drop)
    out.append(("machine ICC(3,2)", zs, b["icc"].ci_low, b["icc"].ci_high, False))
    a = b["alpha_interval"]
    out.append(("machine alpha (interval)", zs, a.ci_low, a.ci_high, False))
    ca = bootstrap_clinician_alpha(clin, **kw_drop)["alpha_interval"]
    out.append(("clinician alpha (interval)", zs, ca.ci_low, ca.ci_high, False))
    if by_model:
        out += fitted_rows(scores, kw_drop)
    if not (report_only and by_model):
        # MedHELM's pair mean: what every report printed before issue 16, and still prints
        # where the design keeps it (complete designs); it may fail where pairs share too few
        # items.
        pair = (
            "before: pair mean, item bootstrap BCa"
            if by_model
            else "report: pair mean, item bootstrap BCa"
        )
        try:
            p = bootstrap_clinician_pairwise(clin, rule=REPORT_RULE, **kw_drop)
            d = bootstrap_machine_minus_clinicians(
                scores, machine=MACHINE, rule=REPORT_RULE, **kw_drop
            )
            p_ci, d_ci = (p.ci_low, p.ci_high), (d.ci_low, d.ci_high)
        except ValueError:  # no estimable pair: no interval
            p_ci = d_ci = (np.nan, np.nan)
        out.append(("clinician pair mean ICC(3,2)", pair, *p_ci, False))
        out.append(("machine - clinician pairs", pair, *d_ci, False))
    if by_model:  # the forms the design gives (agreement.stats.medhelm.form_choice)
        out += model_rows(x)
        if not report_only:
            boot = bootstrap_ci(ClinicianOneWayStatistic(clin, on_degenerate="drop"), **kw)
            out.append((PAIR, "one-way, item bootstrap BCa", boot.ci_low, boot.ci_high, False))
        if not report_only:  # issue 16's difference (its figures are in bench/README.md)
            dd = bootstrap_machine_minus_clinicians(
                scores, machine=MACHINE, clinician_form=ONEWAY, **kw_drop
            )
            out.append(
                (
                    "machine - clinician pairs",
                    "before (issue 16): machine - one-way, item bootstrap BCa",
                    dd.ci_low,
                    dd.ci_high,
                    False,
                )
            )
        dt = bootstrap_machine_minus_clinicians(
            scores, machine=MACHINE, clinician_form=TWOWAY, **kw_drop
        )
        out.append(
            (
                "machine - clinician pairs",
                "before (i21-sparse): z-scored machine - two-way, item bootstrap BCa",
                dt.ci_low,
                dt.ci_high,
                False,
            )
        )
    return out


def fitted_rows(scores: pd.DataFrame, kw: dict) -> list[Row]:
    """What the reports print on an incomplete design since issue 21's machine side: the
    machine's statistics and the difference with the clinicians' offsets fitted (item
    bootstrap BCa, fit redone per resample), the clinicians' interval alpha as the two-way
    ICC(C,1) with Wald's exact interval."""
    fitted = "report: offsets fitted, item bootstrap percentile"
    bca = "offsets fitted, item bootstrap BCa (not chosen)"
    # the report's interval (FITTED_METHOD, percentile) and BCa beside it on the same
    # resamples: BCa is asked for, as only then is its jackknife computed
    assert FITTED_METHOD == "percentile", FITTED_METHOD
    kw = {**kw, "method": "bca"}
    b = bootstrap_machine_fitted(scores, machine=MACHINE, **kw)
    d = bootstrap_machine_minus_clinicians(
        scores, machine=MACHINE, clinician_form=TWOWAY, machine_side=MACHINE_FITTED, **kw
    )
    clin = scores.loc[scores["rater_kind"] == "clinician"]
    ca = clinician_alpha_twoway(clin, on_degenerate="drop", confidence=CONFIDENCE)
    return [
        ("machine ICC(3,2)", fitted, *b["icc"].percentile_ci, False),
        ("machine alpha (interval)", fitted, *b["alpha_interval"].percentile_ci, False),
        (
            "clinician alpha (interval)",
            "report: two-way ICC(C,1), Wald exact",
            ca.ci_low,
            ca.ci_high,
            False,
        ),
        ("machine - clinician pairs", fitted, *d.percentile_ci, False),
        # the same resamples' BCa intervals: why the percentile interval was chosen
        ("machine ICC(3,2)", bca, *b["icc"].bca_ci, False),
        ("machine alpha (interval)", bca, *b["alpha_interval"].bca_ci, False),
        ("machine - clinician pairs", bca, *d.bca_ci, False),
    ]


def model_rows(x: np.ndarray) -> list[Row]:
    """The clinician forms without resampling on an incomplete design: the one-way F interval
    (what the reports printed after issue 16) and the two-way form's Wald interval (what they
    print now): seconds per design."""
    clin = score_table(x)
    one = clinician_oneway(clin, on_degenerate="drop", confidence=CONFIDENCE)
    two = clinician_twoway(clin, on_degenerate="drop", confidence=CONFIDENCE)
    return [
        (PAIR, "before (issue 16): one-way F on z-scores", one.ci_low, one.ci_high, False),
        (PAIR, "report: two-way, Wald exact", two.ci_low, two.ci_high, False),
    ]


def run_block(
    design: Design,
    seeds: list[int],
    n_resamples: int,
    with_icc: bool,
    with_medhelm: bool,
    form_only: bool = False,
    report_only: bool = False,
) -> list[list[Row]]:
    """The rows of each study of one block (a study's data and resamples come from its seed)."""
    out = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        x, machine = simulate_matrix(rng, design)
        rows: list[Row] = []
        if form_only:
            out.append(model_rows(x) if not design.complete else [])
            continue
        if with_icc and design.complete:
            rows += icc_rows(x, seed, n_resamples)
        if with_medhelm:
            try:
                rows += medhelm_rows(x, machine, seed, n_resamples, report_only)
            except ValueError as exc:  # no estimate on this study: counted as undefined
                rows.append(("medhelm", f"error: {exc}", np.nan, np.nan, False))
        out.append(rows)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", default="50,200", help="item counts, comma-separated")
    parser.add_argument("--studies", type=int, default=1000, help="studies per design (ICC forms)")
    parser.add_argument(
        "--medhelm-studies", type=int, default=400, help="studies per design (MedHELM statistics)"
    )
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261205)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--no-medhelm", action="store_true", help="ICC forms only")
    parser.add_argument(
        "--form-only",
        action="store_true",
        help="only the clinician forms without resampling (one-way F, two-way Wald; "
        "incomplete designs; fast)",
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="on incomplete designs only what the reports print (no pair mean: slow with 29)",
    )
    parser.add_argument(
        "--pools",
        default="6,29",
        help="clinician pools of the incomplete designs (2 per item), comma-separated",
    )
    parser.add_argument(
        "--only",
        choices=("all", "complete", "incomplete"),
        default="all",
        help="designs to simulate",
    )
    parser.add_argument(
        "--large-studies",
        type=int,
        default=200,
        help=f"studies per design from {LARGE_ITEMS} items on (bounds the run time)",
    )
    args = parser.parse_args()
    items = [int(v) for v in args.items.split(",")]
    designs = []
    for n in items:
        if args.only != "incomplete":
            designs += [Design(n, 2, 2), Design(n, 3, 3)]
        if args.only != "complete":
            designs += [Design(n, int(pool), 2) for pool in args.pools.split(",")]
    started = time.perf_counter()
    root = np.random.SeedSequence(args.seed)
    print(
        f"coverage of nominal {CONFIDENCE:.0%} intervals; {args.studies} studies per design for "
        f"the ICC forms, {args.medhelm_studies} for the MedHELM statistics; {args.resamples} "
        f"resamples; seed {args.seed}; item SD 1, rater SD 0.3, error SD 1"
    )
    print(f"chosen interval per form: {FORM_INTERVAL}")
    header = "| design | statistic | interval | truth | coverage | MC error | mean width | undefined | approximate |"
    print(header)
    print("|---|---|---|---|---|---|---|---|---|")
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for design, child in zip(designs, root.spawn(len(designs)), strict=True):
            n_studies = max(args.studies, 0 if args.no_medhelm else args.medhelm_studies)
            if design.n_items >= LARGE_ITEMS:
                n_studies = min(n_studies, args.large_studies)
            seeds = [int(s.generate_state(1)[0]) for s in child.spawn(n_studies)]
            blocks = [seeds[i : i + 25] for i in range(0, n_studies, 25)]
            futures = []
            for block_start, block in zip(range(0, n_studies, 25), blocks, strict=True):
                with_icc = block_start < min(args.studies, n_studies)
                with_medhelm = not args.no_medhelm and block_start < min(
                    args.medhelm_studies, n_studies
                )
                futures.append(
                    pool.submit(
                        run_block,
                        design,
                        block,
                        args.resamples,
                        with_icc,
                        with_medhelm,
                        args.form_only,
                        args.report_only,
                    )
                )
            truths = true_values(design)
            tallies: dict[tuple[str, str], Tally] = {}
            for fut in futures:
                for rows in fut.result():
                    for stat, interval, low, high, approx in rows:
                        if interval.startswith("error"):
                            print(f"  {design.label}: {interval}", file=sys.stderr)
                            for name in truths:
                                if not name.startswith("ICC("):
                                    t = tallies.setdefault(
                                        (name, "report: item bootstrap BCa"),
                                        Tally(truths[name], CONFIDENCE),
                                    )
                                    t.add(np.nan, np.nan)
                            continue
                        truth = truths[stat]
                        t = tallies.setdefault((stat, interval), Tally(truth, CONFIDENCE))
                        t.add(low, high, approximate=approx)
            for (stat, interval), t in tallies.items():
                print(
                    f"| {design.label} | {stat} | {interval} | {t.truth:.3f} | "
                    f"{t.coverage:.1%} | {t.mc_error:.1%} | {t.mean_width:.3f} | "
                    f"{t.undefined} of {t.n} | {t.approximate} of {t.n} |",
                    flush=True,
                )
    print(f"wall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
