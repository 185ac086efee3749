"""Which interval each ICC form of a complete items x raters matrix is reported with, chosen
by simulated coverage (bench/bench_coverage.py; normal two-way random-effects studies, fresh
raters per study, item SD 1, rater SD 0.3, error SD 1):

- Absolute agreement, ICC(A,1) and ICC(A,k): raters are a sample from a population (clinicians
  are), so the rater variance is part of what the interval must cover. Resampling items alone
  keeps the study's raters fixed and undercovers (about 91% for a nominal 95% at 200 items x 2
  raters). Resampling raters as well cannot help with the 2-3 raters a study has (a resample
  of 2 raters is the same rater twice half the time). The F interval of McGraw & Wong (1996,
  Table 7; Satterthwaite's approximate df for the rater mean square) models the rater
  variance and is used: "f_mcgraw_wong".
- Consistency, ICC(C,1) and ICC(C,k): the rater means do not enter the statistic, so the item
  bootstrap (BCa) covers: "item_bootstrap_bca".
- One-way, ICC(1,1) and ICC(1,k): the exact F interval of the one-way model: "f_oneway".

Below the item count from which the simulation shows a method covering within 1.5 points of
its level (:data:`CHECKED_FROM_ITEMS`; the item bootstrap undercovers by 1-4 points at 50
items), the interval is marked approximate with the reason. The bounds of the F intervals are those of :func:`agreement.stats.icc.icc`
(equal to pingouin's ``intraclass_corr`` before its rounding).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from .icc import as_matrix, icc
from .icc_bootstrap import icc_bootstrap
from .icc_forms import canonical_form

#: Interval methods, by key, as a method section states them.
INTERVAL_METHODS: dict[str, str] = {
    "f_mcgraw_wong": "F interval of McGraw & Wong (1996, Table 7) with Satterthwaite's "
    "approximate degrees of freedom (raters a random sample from a population)",
    "item_bootstrap_bca": "bootstrap over items, BCa",
    "f_oneway": "exact F interval of the one-way model (Shrout & Fleiss 1979)",
}
#: The method each ICC form is reported with.
FORM_INTERVAL: dict[str, str] = {
    "ICC(1,1)": "f_oneway",
    "ICC(1,k)": "f_oneway",
    "ICC(A,1)": "f_mcgraw_wong",
    "ICC(A,k)": "f_mcgraw_wong",
    "ICC(C,1)": "item_bootstrap_bca",
    "ICC(C,k)": "item_bootstrap_bca",
}
#: From this many items on, the item bootstrap's simulated coverage is within 1.5 points of
#: the nominal level (at 50 items it falls 1-4 points short): the reports' threshold too.
MIN_ITEMS_CHECKED: int = 100
#: Per method, the fewest items from which its simulated coverage is within 1.5 points of
#: the nominal level (bench/bench_coverage.py); None: exact under its model, not simulated.
CHECKED_FROM_ITEMS: dict[str, int | None] = {
    # 94.8-95.5% at 30, 50, 100 and 200 items with 2 and 3 raters (bench/README.md)
    "f_mcgraw_wong": 30,
    "item_bootstrap_bca": MIN_ITEMS_CHECKED,
    "f_oneway": None,
}


def approximate_reason(n_items: int, method: str = "item_bootstrap_bca") -> str | None:
    """Why an interval of ``method`` on ``n_items`` items is approximate, or None."""
    least = CHECKED_FROM_ITEMS[method]
    if least is None or n_items >= least:
        return None
    return (
        f"approximate: {n_items} items; the simulated coverage of this interval "
        f"(bench/bench_coverage.py) is within 1.5 points of the nominal level only from "
        f"{least} items on"
    )


@dataclass(frozen=True)
class IccInterval:
    """One ICC form with the interval it is reported with."""

    form: str
    estimate: float
    ci_low: float
    ci_high: float
    confidence: float
    method: str  # a key of INTERVAL_METHODS
    n_items: int
    n_raters: int
    approximate_reason: str | None  # None: coverage checked for this size

    @property
    def approximate(self) -> bool:
        return self.approximate_reason is not None

    @property
    def method_text(self) -> str:
        return INTERVAL_METHODS[self.method]


def icc_interval(
    matrix: npt.ArrayLike | pd.DataFrame,
    *,
    form: str = "ICC(A,1)",
    confidence: float = 0.95,
    n_resamples: int = 1000,
    seed: int | np.integer | np.random.Generator | None = None,
) -> IccInterval:
    """``form`` of a complete matrix with the interval :data:`FORM_INTERVAL` chooses for it
    (``n_resamples`` and ``seed`` are used only by the bootstrap forms)."""
    form = canonical_form(form)
    x = as_matrix(matrix)
    n, k = x.shape
    method = FORM_INTERVAL[form]
    if method == "item_bootstrap_bca":
        boot = icc_bootstrap(
            x, form=form, n_resamples=n_resamples, confidence=confidence, method="bca", seed=seed
        )
        estimate, low, high = boot.estimate, boot.ci_low, boot.ci_high
    else:
        row = icc(x, confidence=confidence).get(form)
        estimate, low, high = row.icc, row.ci_low, row.ci_high
    return IccInterval(
        form=form,
        estimate=float(estimate),
        ci_low=float(low),
        ci_high=float(high),
        confidence=confidence,
        method=method,
        n_items=n,
        n_raters=k,
        approximate_reason=approximate_reason(n, method),
    )
