"""Which clinician-clinician form a cell of Table 2 is computed with: the one rule, decided
by the design (who rated which item), never by the values.

- MedHELM's mean over clinician pairs of ICC(3,2) (:mod:`.pairwise`) where it applies: every
  clinician rated every item (a complete design), or every pair of clinicians shares at least
  :data:`PAIRWISE_MIN_SHARED_ITEMS` items, so each pair's ICC rests on as many items as the
  simulated coverage was checked from (:data:`~agreement.stats.icc_interval_choice.MIN_ITEMS_CHECKED`).
- Otherwise (each item rated by some of many clinicians, pairs sharing a few items or none)
  ICC(C,2) of the two-way model on the composites with the clinicians' offsets fitted
  jointly (:mod:`.twoway`, Wald's exact interval): a pair mean there averages ICCs of a
  handful of items each and is unstable (planning_sim: 200 items, 2 of 29 clinicians per
  item, median pair mean -10.8), while the two-way model uses every item rated twice or
  more. It replaced (issue 21) the one-way ICC(1,2) on z-scores (:mod:`.oneway`, still
  requestable), whose interval covered 76-87% with 2 of 29 clinicians per item at 100-200
  items: each clinician's z-scores rest on a dozen items there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..icc_interval_choice import MIN_ITEMS_CHECKED

PAIRWISE = "medhelm_pairwise"
ONEWAY = "oneway_z"
TWOWAY = "twoway_raw"
#: The forms by key, as the method text names them.
CLINICIAN_FORMS: dict[str, str] = {
    PAIRWISE: "mean over clinician pairs of ICC(3,2) on within-rater z-scored composites (MedHELM)",
    ONEWAY: "one-way random-effects ICC(1,2) on within-rater z-scored composites (ICC(1) with "
    "the k0 correction for unequal numbers of ratings per item, Donner 1986, stepped up to 2 "
    "ratings by Spearman-Brown, comparable with MedHELM's ICC(3,2))",
    TWOWAY: "two-way ICC(C,2) on the clinicians' composites, each clinician's offset fitted "
    "jointly with the items (items random, clinicians fixed; Henderson's method III): the "
    "reliability of the mean of two clinicians' ratings after their "
    "offsets: MedHELM's ICC(3,2) of a pair where the clinicians use the same scale width "
    "(not z-scored: a clinician's spread is not rescaled)",
}
#: What a comparison may ask for: the form the design decides (the default), or one form in
#: every cell (MedHELM's pair mean everywhere, to reproduce the published method as it is).
BY_DESIGN = "design"
REQUESTABLE_FORMS = (BY_DESIGN, PAIRWISE, TWOWAY, ONEWAY)
#: How the reason of a form asked for against the design begins (the design's reason follows).
ASKED_AGAINST_DESIGN = "asked for; the design would give another form"
#: An incomplete design keeps MedHELM's pair mean when every pair shares this many items.
PAIRWISE_MIN_SHARED_ITEMS: int = MIN_ITEMS_CHECKED
COMPLETE, INCOMPLETE = "complete", "incomplete"
#: The machine side of a cell (machine vs clinicians, and the machine term of a difference):
#: MedHELM's z-scores, or with the clinicians' offsets fitted (:mod:`.fitted`).
MACHINE_ZSCORED = "machine_zscores"
MACHINE_FITTED = "machine_offsets_fitted"
MACHINE_FORMS: dict[str, str] = {
    MACHINE_ZSCORED: "ICC(3,k) k=2 on within-rater z-scored composites (MedHELM)",
    MACHINE_FITTED: "ICC(3,2) of the machine and the clinicians' mean with each clinician's "
    "offset fitted jointly with the items (the two-way model of the clinician cell), not "
    "z-scored over the few items a clinician rated: 4c / (v + 1 + 2c), c the machine's "
    "correlation with the item effect, v the variance of the clinicians' mean z-score, both "
    "from the fit",
}


@dataclass(frozen=True)
class FormChoice:
    """The clinician-clinician form of one cell and why."""

    form: str  # a key of CLINICIAN_FORMS
    design: str  # "complete" or "incomplete"
    min_shared_items: int  # fewest items any two of the clinicians share
    reason: str

    @property
    def text(self) -> str:
        return CLINICIAN_FORMS[self.form]


def machine_form(clinician_form: str, design: str) -> str:
    """The machine side that goes with a clinician cell's form (a key of CLINICIAN_FORMS) on
    a design ("complete" or "incomplete"): offsets fitted where the
    clinicians get the two-way form on an incomplete design (z-scores from the handful of
    items each clinician rated bias the machine's ICC(3,2) and alphas there, issue 21), else
    MedHELM's z-scores (complete designs keep their figures exactly)."""
    if clinician_form == TWOWAY and design == INCOMPLETE:
        return MACHINE_FITTED
    return MACHINE_ZSCORED


def rated_matrix(clinician_rows: pd.DataFrame) -> np.ndarray:
    """(items, clinicians) 0/1 matrix of who rated what, from rows with item and rater."""
    pairs = clinician_rows.loc[:, ["item", "rater"]].drop_duplicates()
    items = pd.factorize(pairs["item"], sort=True)[0]
    raters = pd.factorize(pairs["rater"], sort=True)[0]
    out = np.zeros((items.max() + 1 if len(items) else 0, raters.max() + 1 if len(raters) else 0))
    out[items, raters] = 1.0
    return out


def choose_clinician_form(clinician_rows: pd.DataFrame, *, asked: str = BY_DESIGN) -> FormChoice:
    """The form for the clinicians' rows (columns item, rater) of one cell (see module), or
    the form ``asked`` for (one of REQUESTABLE_FORMS), its reason saying what the design
    would have given."""
    if asked not in REQUESTABLE_FORMS:
        raise ValueError(f"clinician form must be one of {REQUESTABLE_FORMS}, got {asked!r}")
    by_design = _form_by_design(clinician_rows)
    if asked in (BY_DESIGN, by_design.form):
        return by_design
    return FormChoice(
        asked,
        by_design.design,
        by_design.min_shared_items,
        f"{ASKED_AGAINST_DESIGN} ({by_design.reason})",
    )


def _form_by_design(clinician_rows: pd.DataFrame) -> FormChoice:
    rated = rated_matrix(clinician_rows)
    n_raters = rated.shape[1]
    if n_raters < 2:
        return FormChoice(PAIRWISE, COMPLETE, 0, "fewer than 2 clinicians")
    complete = bool((rated.sum(axis=1) == n_raters).all())
    shared = rated.T @ rated
    least = int(shared[np.triu_indices(n_raters, 1)].min())
    if complete:
        return FormChoice(PAIRWISE, COMPLETE, least, "every clinician rated every item")
    if least >= PAIRWISE_MIN_SHARED_ITEMS:
        return FormChoice(
            PAIRWISE,
            INCOMPLETE,
            least,
            f"every pair of clinicians shares at least {PAIRWISE_MIN_SHARED_ITEMS} items ({least})",
        )
    return FormChoice(
        TWOWAY,
        INCOMPLETE,
        least,
        f"each item rated by some of the {n_raters} clinicians and some pairs share fewer "
        f"than {PAIRWISE_MIN_SHARED_ITEMS} items ({least}): the two-way form",
    )
