"""Simulated rating studies for the designs the sample-size formulas do not cover.

From planned variance components (item SD, rater SD, error SD) a study of ``n_items`` items,
each rated by ``raters_per_item`` of ``n_raters`` raters (drawn at random per item when fewer
than all), is simulated ``n_studies`` times, seeded, and each simulated study goes through the
study's own ICC code: :func:`agreement.stats.icc.icc` (complete designs, any of the six
forms) or :func:`agreement.stats.icc_oneway.icc_oneway_unbalanced` (incomplete designs, the
one-way ICC(1) / ICC(1,k0) with its F interval: the interval the code has for them), or,
for ``form="MedHELM pairs"``, :func:`agreement.stats.medhelm.clinician_pairwise` (MedHELM's
mean ICC(3,2) over clinician pairs on within-rater z-scores). What comes back is the
distribution of the interval widths and of the point estimates, and how often the interval
covered the ICC the components imply. The MedHELM statistic has no closed-form interval (the
report bootstraps items), so for it only the spread of the estimates is reported: the
2.5th-97.5th percentile range across simulated studies is what a 95% interval estimates.

Model: value = item effect + rater effect + error, all normal with mean 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from .icc import icc
from .icc_forms import FORMS, canonical_form
from .icc_oneway import icc_oneway_unbalanced
from .medhelm import clinician_pairwise
from .planning import PlanningInputError

#: Upper bounds on one simulation's inputs (the page, the command and the task share them).
MAX_STUDIES = 5000
MAX_RATINGS_PER_STUDY = 200_000
ONE_WAY_FORMS = ("ICC(1,1)", "ICC(1,k)")
MEDHELM_PAIRS = "MedHELM pairs"
#: The most work one simulation may ask for, as simulated studies x items x raters in the
#: study (R): each simulated study draws every item's raters from the R (an items x R array),
#: so its time and memory grow with that product. MedHELM's clinician pairs cost far more per
#: rating (an ICC per pair of clinicians), hence their own limit. At the limits the slowest
#: designs measured took 14 s (ICC forms) and 89 s (pairs) of one core (bench/README.md).
MAX_STUDIES_ITEMS_RATERS = {"ICC": 100_000_000, MEDHELM_PAIRS: 2_000_000}


@dataclass(frozen=True)
class DesignSpec:
    """A planned rating study."""

    item_sd: float
    rater_sd: float
    error_sd: float
    n_items: int
    raters_per_item: int
    n_raters: int
    form: str = "ICC(1,1)"
    confidence: float = 0.95
    n_studies: int = 500
    seed: int = 0

    @property
    def complete(self) -> bool:
        return self.raters_per_item == self.n_raters


@dataclass(frozen=True)
class SimulationResult:
    """Distribution of interval widths and ICC estimates over the simulated studies."""

    spec: DesignSpec
    estimator: str
    true_icc: float
    n_done: int
    n_undefined: int  # studies whose estimate or interval was not finite (e.g. all equal)
    width_median: float | None  # None: the estimator has no per-study interval
    width_p90: float | None
    width_mean: float | None
    icc_median: float
    icc_p05: float
    icc_p95: float
    coverage: float | None
    estimate_range95: float  # 97.5th minus 2.5th percentile of the estimates

    def as_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["spec"] = asdict(self.spec)
        return out


def _positive_int(name: str, value: int, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise PlanningInputError(name, f"must be a whole number of at least {low}, got {value!r}")


def validate(spec: DesignSpec) -> str:
    """Check the spec; return its canonical form name. Raises PlanningInputError."""
    for name in ("item_sd", "rater_sd", "error_sd"):
        v = getattr(spec, name)
        if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise PlanningInputError(name, f"must be a finite number >= 0, got {v!r}")
    if spec.item_sd == 0:
        raise PlanningInputError("item_sd", "must be above 0 (no item variance, no ICC)")
    if spec.error_sd == 0:
        raise PlanningInputError(
            "error_sd", "must be above 0 (no error, every interval is a point)"
        )
    _positive_int("n_items", spec.n_items, 3)
    _positive_int("raters_per_item", spec.raters_per_item, 2)
    _positive_int("n_raters", spec.n_raters, 2)
    _positive_int("n_studies", spec.n_studies, 10)
    _positive_int("seed", spec.seed, 0)
    if spec.raters_per_item > spec.n_raters:
        raise PlanningInputError(
            "raters_per_item", f"cannot exceed the number of raters ({spec.n_raters})"
        )
    if spec.n_studies > MAX_STUDIES:
        raise PlanningInputError("n_studies", f"at most {MAX_STUDIES}, got {spec.n_studies}")
    if spec.n_items * spec.raters_per_item > MAX_RATINGS_PER_STUDY:
        raise PlanningInputError(
            "n_items", f"n_items x raters_per_item must stay within {MAX_RATINGS_PER_STUDY:,}"
        )
    if not isinstance(spec.confidence, (int, float)) or not 0.5 <= spec.confidence < 1:
        raise PlanningInputError("confidence", f"must be in [0.5, 1), got {spec.confidence!r}")
    if spec.form == MEDHELM_PAIRS:
        if spec.raters_per_item != 2:
            raise PlanningInputError(
                "raters_per_item", "MedHELM's clinician pairs need exactly 2 raters per item"
            )
        _check_work(spec, MEDHELM_PAIRS)
        return MEDHELM_PAIRS
    try:
        form = canonical_form(spec.form)
    except (KeyError, ValueError) as exc:
        raise PlanningInputError(
            "form", f"unknown ICC form {spec.form!r}; use one of {FORMS}"
        ) from exc
    if not spec.complete and form not in ONE_WAY_FORMS:
        raise PlanningInputError(
            "form",
            f"an incomplete design (each item rated by {spec.raters_per_item} of "
            f"{spec.n_raters} raters) has an interval only for {' or '.join(ONE_WAY_FORMS)} "
            f"(or use {MEDHELM_PAIRS!r})",
        )
    _check_work(spec, "ICC")
    return form


def _check_work(spec: DesignSpec, estimator: str) -> None:
    limit = MAX_STUDIES_ITEMS_RATERS[estimator]
    work = spec.n_studies * spec.n_items * spec.n_raters
    if work > limit:
        raise PlanningInputError(
            "n_studies",
            f"studies x items x raters = {spec.n_studies:,} x {spec.n_items:,} x "
            f"{spec.n_raters:,} = {work:,} is over the limit of {limit:,} for "
            f"{'the ICC forms' if estimator == 'ICC' else MEDHELM_PAIRS} "
            "(MAX_STUDIES_ITEMS_RATERS): simulate fewer studies, items or raters",
        )


def true_icc(spec: DesignSpec, form: str) -> float:
    """The ICC the variance components imply for ``form`` (k = raters per item)."""
    si, sr, se = spec.item_sd**2, spec.rater_sd**2, spec.error_sd**2
    k = spec.raters_per_item
    if form == MEDHELM_PAIRS:  # ICC(3,2) of a pair, raters' means removed by the z-scores
        return si / (si + se / 2)
    noise = se if form in ("ICC(C,1)", "ICC(C,k)") else sr + se
    single = si / (si + noise)
    if form.endswith("k)"):
        return si / (si + noise / k)
    return single


def _one_study(spec: DesignSpec, form: str, rng: np.random.Generator) -> tuple[float, float, float]:
    n, k, r = spec.n_items, spec.raters_per_item, spec.n_raters
    items = rng.normal(0.0, spec.item_sd, n)
    raters = rng.normal(0.0, spec.rater_sd, r)
    if spec.complete and form != MEDHELM_PAIRS:
        values = items[:, None] + raters[None, :] + rng.normal(0.0, spec.error_sd, (n, k))
        est = icc(values, confidence=spec.confidence).get(form)
        return est.icc, est.ci_low, est.ci_high
    # each item's k raters: the first k of a random permutation of the R raters
    who = np.argsort(rng.random((n, r)), axis=1)[:, :k]
    values = items[:, None] + raters[who] + rng.normal(0.0, spec.error_sd, (n, k))
    table = pd.DataFrame(
        {"item": np.repeat(np.arange(n), k), "rater": who.ravel(), "value": values.ravel()}
    )
    if form == MEDHELM_PAIRS:
        table["criterion"] = "composite"
        table["rater_kind"] = "clinician"
        try:
            mean = clinician_pairwise(table, on_degenerate="drop").mean_icc
        except ValueError:  # no pair shares 2 items with a defined ICC
            mean = float("nan")
        return mean, float("nan"), float("nan")
    one = icc_oneway_unbalanced(table, confidence=spec.confidence)
    if form == "ICC(1,1)":
        return one.icc, one.ci_low, one.ci_high
    return one.icc_k0, one.ci_k0_low, one.ci_k0_high


def simulate_design(
    spec: DesignSpec,
    *,
    progress: Callable[[int, int], None] | None = None,
    progress_every: int = 50,
) -> SimulationResult:
    """Simulate ``spec.n_studies`` studies (seeded by ``spec.seed``) and summarise them.

    ``progress(done, total)`` is called every ``progress_every`` studies and at the end."""
    form = validate(spec)
    rng = np.random.default_rng(spec.seed)
    target = true_icc(spec, form)
    points = np.empty(spec.n_studies)
    lows = np.empty(spec.n_studies)
    highs = np.empty(spec.n_studies)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(spec.n_studies):
            points[i], lows[i], highs[i] = _one_study(spec, form, rng)
            if progress is not None and ((i + 1) % progress_every == 0):
                progress(i + 1, spec.n_studies)
    if progress is not None and spec.n_studies % progress_every:
        progress(spec.n_studies, spec.n_studies)
    has_interval = form != MEDHELM_PAIRS
    ok = np.isfinite(points)
    if has_interval:
        ok &= np.isfinite(lows) & np.isfinite(highs)
    if not ok.any():
        raise PlanningInputError("n_items", "no simulated study gave a finite estimate")
    widths = highs[ok] - lows[ok]
    est = points[ok]
    covered = (lows[ok] <= target) & (target <= highs[ok])
    if not has_interval:
        estimator = (
            "agreement.stats.medhelm.clinician_pairwise, mean ICC(3,2) over clinician pairs "
            "on within-rater z-scores (no per-study interval: the report bootstraps items)"
        )
    elif spec.complete:
        estimator = f"agreement.stats.icc, {form}, F interval"
    else:
        estimator = f"agreement.stats.icc_oneway_unbalanced, {form} (k0), F interval"
    return SimulationResult(
        spec=spec,
        estimator=estimator,
        true_icc=float(target),
        n_done=spec.n_studies,
        n_undefined=int((~ok).sum()),
        width_median=float(np.median(widths)) if has_interval else None,
        width_p90=float(np.quantile(widths, 0.9)) if has_interval else None,
        width_mean=float(widths.mean()) if has_interval else None,
        icc_median=float(np.median(est)),
        icc_p05=float(np.quantile(est, 0.05)),
        icc_p95=float(np.quantile(est, 0.95)),
        coverage=float(covered.mean()) if has_interval else None,
        estimate_range95=float(np.quantile(est, 0.975) - np.quantile(est, 0.025)),
    )


def components_for_icc(rho: float, *, rater_share: float = 0.0) -> tuple[float, float, float]:
    """(item SD, rater SD, error SD) with total variance 1 giving single-rater ICC ``rho``;
    ``rater_share`` of the non-item variance goes to raters."""
    if not 0 < rho < 1:
        raise PlanningInputError("rho", f"must be strictly between 0 and 1, got {rho!r}")
    if not 0 <= rater_share < 1:
        raise PlanningInputError("rater_share", f"must be in [0, 1), got {rater_share!r}")
    noise = 1 - rho
    return math.sqrt(rho), math.sqrt(noise * rater_share), math.sqrt(noise * (1 - rater_share))
