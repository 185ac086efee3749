"""What a comparison is computed with, and the names its statistics are reported under."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agreement.errors import AgreementError
from agreement.stats import BOUNDS, MEDHELM_MIN_SHARED_ITEMS, EstimabilityRule
from agreement.stats.estimability import WIDEST
from agreement.stats.icc_interval_choice import MIN_ITEMS_CHECKED
from agreement.stats.jackknife import JACKKNIFE_GROUPS
from agreement.stats.medhelm import (
    BY_DESIGN,
    CLINICIAN_FORMS,
    MACHINE_FITTED,
    ONEWAY,
    PAIRWISE,
    REQUESTABLE_FORMS,
    TWOWAY,
)
from agreement.stats.medhelm.form_choice import PAIRWISE_MIN_SHARED_ITEMS

ROW_ALL = "All items"
CLINICIAN_COLUMN = "clinician-clinician"
MACHINE_FORM = "ICC(3,k) k=2 on within-rater z-scored composites (MedHELM)"
PAIRWISE_FORM = "mean over clinician pairs of ICC(3,2) on within-rater z-scored composites"
PAIRWISE_RULE = (
    "every pair of clinicians sharing >= {medhelm} items (MedHELM); ICC(3,2) on their z-scores "
    "over the shared items; plain unweighted mean over pairs (pairs with no variation left "
    "out; pairs sharing fewer than {n} items, the estimability rule's minimum, left out and "
    "counted; no pair left out for its value, the mean is held to {bounds} instead)"
)
#: The estimability rule's interval width when a report does not state one: MedHELM's widest
#: published interval, ROUGE-L (0, 0.630), is well inside it, and an interval wider than 1
#: covers more than half of [-1, 1].
DEFAULT_MAX_CI_WIDTH = 1.0
#: What a report computed before the estimability rule says about it.
RULE_NOT_APPLIED = (
    "not applied: this report was computed before the estimability rule existed; its "
    "estimates are shown as computed (values outside [-1, 1] and intervals of any width "
    "included) and it has no sensitivity line. Recompute it to apply the rule."
)
RULE_NOT_APPLIED_RECORD = {"applied": False, "text": RULE_NOT_APPLIED}
#: The clinician-clinician form, as the method states it: the design decides, per cell.
CLINICIAN_FORM_RULE = (
    f"decided per cell by the design: {CLINICIAN_FORMS[PAIRWISE]} where every clinician "
    f"rated every item of the cell or every pair of clinicians shares at least "
    f"{PAIRWISE_MIN_SHARED_ITEMS} items; otherwise (each item rated by some of the "
    f"clinicians) the {CLINICIAN_FORMS[TWOWAY]}; on request the {CLINICIAN_FORMS[ONEWAY]}; "
    "each cell records its form (clinician_form) and why (form_reason)"
)
#: The clinician-clinician form when a report asked for one form in every cell.
CLINICIAN_FORM_ASKED = (
    "{form} in every cell, as the report asked ({why}), whatever the design; each cell records "
    "its form (clinician_form) and, where the design would have given another form, says so "
    "(form_reason)"
)
_ASKED_WHY = {
    PAIRWISE: "to reproduce MedHELM's published method",
    TWOWAY: "one form for every design, the clinicians' offsets fitted",
    ONEWAY: "one form for every design",
}
#: What a report may ask for as its clinician-clinician form, as a researcher chooses it.
CLINICIAN_FORM_CHOICES: dict[str, str] = {
    BY_DESIGN: "Decided per cell by the design (default)",
    PAIRWISE: "MedHELM's mean over clinician pairs in every cell (the published method)",
    TWOWAY: "Two-way ICC(C,2) with each clinician's offset fitted, in every cell",
    ONEWAY: "One-way ICC(1,2) on z-scores in every cell",
}


def clinician_form_rule(asked: str) -> str:
    """The method's clinician-clinician form for a report that asked for ``asked`` (one of
    REQUESTABLE_FORMS): the design's rule, or the one form in every cell."""
    if asked == BY_DESIGN:
        return CLINICIAN_FORM_RULE
    return CLINICIAN_FORM_ASKED.format(form=CLINICIAN_FORMS[asked], why=_ASKED_WHY[asked])


#: The interval of the one-way clinician form.
ONEWAY_CI_METHOD = (
    "F interval of the one-way model (k0 for unequal numbers of ratings per item), mapped to "
    "2 ratings by Spearman-Brown"
)
#: The interval of the two-way clinician form.
TWOWAY_CI_METHOD = (
    "Wald's exact interval for the ratio of the item to the error variance of the two-way "
    "model with the clinicians' offsets fitted (F pivot on the item sum of squares adjusted "
    "for the clinicians, split along the design's eigenvalues; Wald 1940, Harville & Fenech "
    "1985), mapped to ICC(C,2)"
)
ALPHA_FORM = (
    "Krippendorff's alpha, interval and ordinal levels (Krippendorff 2011), on the same "
    "z-scored composites as the ICC: machine columns over the ICC's two 'raters' (clinician "
    "mean z, machine z); clinician-clinician over every clinician's z-scores at once (items as "
    "units, any number of clinicians per item; not a mean over pairs); ordinal uses the order "
    "of the z-scores only; bootstrap interval on the ICC's item resamples (same seed)"
)
DIFFERENCE_FORM = "machine ICC(3,2) minus clinician-clinician mean ICC(3,2), same resamples"
#: The machine side on an incomplete design with the two-way clinician form (issue 21).
FITTED_CI_METHOD = (
    "bootstrap over items, percentile, each clinician's offset and the two-way model's item "
    "and error variances refitted on every resample (agreement.stats.medhelm.fitted; "
    "percentile, not BCa, whatever the report's setting: chosen by simulation)"
)
#: The clinicians' interval alpha on such a design: the two-way model's ICC(C,1).
TWOWAY_ALPHA_CI_METHOD = (
    "the clinicians' interval alpha with their offsets fitted is s2_item / (s2_item + s2_e) "
    "of the two-way model (the value interval alpha estimates once each clinician's offset is "
    "removed), with Wald's exact interval for ICC(C,1); ordinal alpha stays on the z-scores "
    "(bootstrap over items; it has no fitted counterpart and its coverage is not simulated)"
)
CI_METHODS = {"bca": "bootstrap over items, BCa", "percentile": "bootstrap over items, percentile"}
#: How BCa's acceleration is estimated: said once in the method record, and in each cell
#: whose jackknife left out groups of items (agreement.stats.jackknife.JACKKNIFE_GROUPS).
BCA_ACCELERATION = (
    "BCa's acceleration from the leave-one-item-out jackknife, or where a cell has more than "
    f"{JACKKNIFE_GROUPS:,} items from a jackknife leaving out one of {JACKKNIFE_GROUPS:,} random "
    "groups of items at a time (an estimate of the same acceleration whose cost grows linearly "
    "with the items; bench/bench_jackknife_groups.py compares the two)"
)


def ci_method_text(method: str, *, n_items: int, jackknife_units: int) -> str:
    """A cell's interval method: CI_METHODS, and for BCa over groups of items, how many."""
    text = CI_METHODS[method]
    if method == "bca" and 0 < jackknife_units < n_items:
        text += f" (acceleration from a jackknife over {jackknife_units:,} groups of items)"
    return text


#: Which interval each statistic of Table 2 is given with, and why it may resample items only
#: ("{ci}" is the report's CI_METHODS text).
INTERVAL_BY_STATISTIC = {
    "machine_vs_clinicians": "{ci}; ICC(3,2) is a consistency form on within-rater z-scores "
    "(every rater's mean removed), so sampling the raters from a population adds no variance "
    "that resampling items leaves out",
    "clinician_clinician": "{ci}; z-scores and every pair's ICC(3,2) recomputed per resample",
    "clinician_clinician_oneway": ONEWAY_CI_METHOD,
    "clinician_clinician_twoway": TWOWAY_CI_METHOD,
    "alpha": "{ci}, on the ICC's resamples (z-scores, so the rater means do not enter)",
    "difference": "{ci}; both terms on the same resamples",
    "machine_vs_clinicians_fitted": FITTED_CI_METHOD,
    "alpha_fitted": "machine: interval alpha 2c / (v + 1) from the same fit, "
    + FITTED_CI_METHOD
    + "; clinicians: "
    + TWOWAY_ALPHA_CI_METHOD,
    "difference_fitted": "both terms from the same fit, " + FITTED_CI_METHOD,
}
INTERVAL_COVERAGE = (
    "coverage checked by simulation (bench/bench_coverage.py: normal two-way random-effects "
    "studies with raters drawn afresh per study, 2 or 3 raters per item, complete and "
    "incomplete designs): where every clinician rates every item, within 1.5 points of the "
    "nominal level from {n} items on; with fewer items the item bootstrap covers less than "
    "its nominal level by more than that, so an interval on fewer than {n} items is marked "
    "approximate; the machine-minus-clinician difference there covered 93.3% at 100 items "
    "with 2 clinicians (1,600 studies, Monte Carlo SD 0.5 points) and 94.5% at 200, so a "
    "difference on a complete design is marked approximate below 200 items. Where each item "
    "is rated by a few of many clinicians, MedHELM's z-scored statistics covered less by more "
    "than 1.5 points at 100-200 items too (with 2 of 29 clinicians per item the machine ICC "
    "and alphas 87.5-91.0%, the machine-minus-clinician difference 76.5-90.5%: each "
    "clinician's z-scores rest on a handful of items), so on such a design the cells use the "
    "two-way model with the clinicians' offsets fitted: the clinician-clinician ICC(C,2) with "
    "Wald's exact interval covered 93.9-95.6% (1,000 studies each, Monte Carlo SD 0.7 points) "
    "and the clinicians' interval alpha (ICC(C,1), Wald) 94.5-96.2% (600-2,000 studies each, "
    "Monte Carlo SD 0.5-0.9 points) with 2 of 6 and 2 of 29 clinicians per item at 100 and "
    "200 items, so that cell is not marked approximate from {n} items on; with the offsets "
    "fitted the machine-minus-clinician difference covered 94.5-95.2% in those four designs "
    "(600-2,000 studies each, Monte Carlo SD 0.5-0.9 points), so differences on an incomplete "
    "design are not marked either; the machine's ICC(3,2) and interval alpha covered "
    "94.4-95.8% where the clinicians rated 13.8 items each or more on average (2 of 6 "
    "clinicians per item; 2 of 29 at 200 items) and 97.2% with 6.9 each (2 of 29 at 100 "
    "items, 2,000 studies: wider than needed, as a resample leaves a clinician fewer distinct "
    "items than the data give to fit its offset), so a machine cell whose clinicians rated "
    "fewer than 13.8 items each is marked approximate (percentile intervals; ordinal alpha "
    "stays on z-scores and its coverage is not simulated); the one-way ICC(1,2) on z-scores "
    "(issue 16, available on request) covered 78.0-87.5% with 2 of 29 clinicians per item and "
    "keeps the mark (bench/README.md)"
)
#: What a cell's interval on an incomplete design (each item rated by some of the
#: clinicians) says of itself.
INCOMPLETE_DESIGN_NOTE = (
    "approximate interval: each item rated by some of the clinicians (an incomplete design), "
    "where the simulated coverage of the interval differed from its nominal level by more "
    "than 1.5 points (Method)"
)
#: What a cell's interval on fewer than APPROXIMATE_BELOW_ITEMS items says of itself.
APPROXIMATE_NOTE = (
    "approximate interval: fewer than {n} items, where the simulated coverage of the "
    "interval falls short of its nominal level by more than 1.5 points (Method)"
)
APPROXIMATE_BELOW_ITEMS = MIN_ITEMS_CHECKED
#: The machine-minus-clinician difference on a complete design (every clinician rates every
#: item) is checked from this many items: with 2 clinicians it covered 93.3% at 100 items
#: (1,600 studies, Monte Carlo SD 0.5 points; 1.7 points short) and 94.5% at 200 items
#: (bench/README.md, "Complete designs at 30 and 100 items").
DIFFERENCE_APPROXIMATE_BELOW_ITEMS = 200
DIFFERENCE_APPROXIMATE_NOTE = (
    "approximate interval: a difference on fewer than {n} items, where the simulated "
    "coverage of its interval falls short of its nominal level by more than 1.5 points "
    "(Method)"
)
#: Clinician-clinician forms whose interval the simulation (bench/bench_coverage.py) found
#: within 1.5 points of its nominal level on incomplete designs from APPROXIMATE_BELOW_ITEMS
#: items on: their cells on such designs are not marked approximate.
INCOMPLETE_CHECKED_FORMS: tuple[str, ...] = (TWOWAY,)
#: Machine sides (agreement.stats.medhelm.form_choice.MACHINE_FORMS) whose machine cells'
#: intervals the simulation found within 1.5 points of nominal on incomplete designs from
#: APPROXIMATE_BELOW_ITEMS items on, where the clinicians rated at least
#: INCOMPLETE_MACHINE_MIN_RATINGS_PER_CLINICIAN items each on average (bench/README.md,
#: issue 21).
INCOMPLETE_CHECKED_MACHINE_FORMS: tuple[str, ...] = (MACHINE_FITTED,)
#: The least mean number of items per clinician at which the fitted machine ICC and interval
#: alpha were found covering: 200 items rated by 2 of 29 clinicians each (13.8). With 2 of 29
#: on 100 items (6.9 each) they covered 97.2% (2,000 studies): conservative, as a resample
#: leaves a clinician fewer distinct items than the data give to fit its offset.
INCOMPLETE_MACHINE_MIN_RATINGS_PER_CLINICIAN = 2 * 200 / 29
#: What a fitted machine cell on a sparser design says of its interval.
SPARSE_DESIGN_NOTE = (
    "approximate interval: the clinicians rated fewer than {least:.1f} items each on average "
    "(an incomplete design), where the simulated coverage of the interval exceeded its "
    "nominal level by more than 1.5 points (wider than needed; Method)"
)
#: The same for the differences (machine minus clinician-clinician): the fitted side's
#: percentile interval covered within 1.5 points in every design simulated, 2 of 29 on 100
#: items included.
INCOMPLETE_CHECKED_DIFFERENCE_FORMS: tuple[str, ...] = (MACHINE_FITTED,)


@dataclass(frozen=True)
class Settings:
    """What a comparison is computed with (all recorded in a report's method)."""

    n_resamples: int = 1000
    seed: int = 0
    confidence: float = 0.95
    method: str = "bca"
    min_items: int = 3
    min_shared_items: int = MEDHELM_MIN_SHARED_ITEMS  # the estimability rule's minimum
    max_ci_width: float = DEFAULT_MAX_CI_WIDTH  # the estimability rule's widest interval
    # the clinician-clinician form: the one the design decides, or one form in every cell
    clinician_form: str = BY_DESIGN

    def __post_init__(self) -> None:
        if self.clinician_form not in REQUESTABLE_FORMS:
            raise AgreementError(
                f"clinician_form must be one of {list(REQUESTABLE_FORMS)}, "
                f"got {self.clinician_form!r}",
                field="clinician_form",
            )
        if self.method not in CI_METHODS:
            raise AgreementError(
                f"method must be one of {sorted(CI_METHODS)}, got {self.method!r}",
                field="ci_method",
            )
        if self.min_items < 2:
            raise AgreementError("min_items must be >= 2", field="min_items")
        if self.min_shared_items < 2:
            raise AgreementError("min_shared_items must be >= 2", field="min_shared_items")
        if not 0 < self.max_ci_width <= WIDEST:
            raise AgreementError(
                f"max_ci_width must be above 0 and at most {WIDEST:g}", field="max_ci_width"
            )

    @property
    def rule(self) -> EstimabilityRule:
        """The estimability rule every cell and clinician pair of the comparison is held to."""
        return EstimabilityRule(
            max_ci_width=self.max_ci_width, min_shared_items=self.min_shared_items, bounds=BOUNDS
        )

    def pairwise_rule(self) -> str:
        """PAIRWISE_RULE with this comparison's values."""
        return PAIRWISE_RULE.format(
            medhelm=MEDHELM_MIN_SHARED_ITEMS,
            n=self.min_shared_items,
            bounds=self.rule.bounds_text(),
        )

    def interval_record(self) -> dict[str, Any]:
        """Which interval each statistic uses, the simulated coverage behind the choice, and
        the item count below which a cell's interval is marked approximate."""
        ci = CI_METHODS[self.method]
        return {
            "by_statistic": {k: v.format(ci=ci) for k, v in INTERVAL_BY_STATISTIC.items()},
            "coverage": INTERVAL_COVERAGE.format(n=APPROXIMATE_BELOW_ITEMS),
            "approximate_below_items": APPROXIMATE_BELOW_ITEMS,
            "approximate_note": APPROXIMATE_NOTE.format(n=APPROXIMATE_BELOW_ITEMS),
            "difference_approximate_below_items": DIFFERENCE_APPROXIMATE_BELOW_ITEMS,
            "difference_approximate_note": DIFFERENCE_APPROXIMATE_NOTE.format(
                n=DIFFERENCE_APPROXIMATE_BELOW_ITEMS
            ),
            "approximate_incomplete_note": INCOMPLETE_DESIGN_NOTE,
            "incomplete_checked_forms": list(INCOMPLETE_CHECKED_FORMS),
            "incomplete_checked_machine_forms": list(INCOMPLETE_CHECKED_MACHINE_FORMS),
            "incomplete_checked_difference_forms": list(INCOMPLETE_CHECKED_DIFFERENCE_FORMS),
            "incomplete_machine_min_ratings_per_clinician": (
                INCOMPLETE_MACHINE_MIN_RATINGS_PER_CLINICIAN
            ),
            "approximate_sparse_note": SPARSE_DESIGN_NOTE.format(
                least=INCOMPLETE_MACHINE_MIN_RATINGS_PER_CLINICIAN
            ),
        }

    def boot(self) -> dict[str, Any]:
        """The keyword arguments every bootstrap of the comparison takes."""
        return {
            "n_resamples": self.n_resamples,
            "confidence": self.confidence,
            "method": self.method,
            "seed": self.seed,
        }
