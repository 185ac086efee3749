"""The planning questions as forms (page and command share the planners in agreement.planning):
each form's fields carry the names the planners use, so a PlanningInputError lands under the
field it names. Every field says its unit and what it means: an "item" is one model output
rated by clinicians (the unit the ICC is computed over), a "rater" one clinician (or judge),
an ICC and an interval width are on the ICC's own 0 to 1 scale, probabilities are
proportions (0.95, not 95)."""

from __future__ import annotations

from django import forms

from agreement.stats.icc_forms import FORMS
from agreement.stats.planning_sim import MAX_STUDIES, MEDHELM_PAIRS

TAILS = [(1, "One-sided (ICC above the null)"), (2, "Two-sided")]


ICC_UNIT = "An ICC, from 0 to 1: the share of the score variance that lies between items."
K_UNIT = "How many clinicians (raters) rate each item: a count."
CONFIDENCE_UNIT = "A proportion: 0.95 for a 95% interval."
ALPHA_UNIT = "A proportion: the chance of a false claim, 0.05 for 5%."
POWER_UNIT = "A proportion: the chance to show it when it is true, 0.8 for 80%."
SD_UNIT = "In points of the rating scale (the composite of the criteria)."


def _rho(label: str, initial: float, help_text: str = ICC_UNIT) -> forms.FloatField:
    return forms.FloatField(
        label=label, min_value=0.0, max_value=0.999, initial=initial, help_text=help_text
    )


def _k(label: str, initial: int, help_text: str = K_UNIT) -> forms.IntegerField:
    return forms.IntegerField(
        label=label, min_value=2, max_value=1000, initial=initial, help_text=help_text
    )


def _prob(label: str, initial: float, help_text: str) -> forms.FloatField:
    return forms.FloatField(
        label=label, min_value=0.001, max_value=0.999, initial=initial, help_text=help_text
    )


class PrecisionForm(forms.Form):
    """Bonett (2002): items for an interval of a given width."""

    rho = _rho("Planned ICC(1)", 0.7, ICC_UNIT + " The agreement you expect to find.")
    k = _k("Raters per item (k)", 3)
    confidence = _prob("Confidence level", 0.95, CONFIDENCE_UNIT)
    width = forms.FloatField(
        label="Full width of the interval",
        min_value=0.01,
        max_value=0.99,
        initial=0.2,
        help_text="In ICC units (0 to 1): the upper bound minus the lower bound, so 0.2 "
        "means about ±0.1 around the planned ICC.",
    )
    small_k_correction = forms.BooleanField(
        label="Add Bonett's 5 rho for k = 2 and rho >= 0.7",
        required=False,
        initial=True,
        help_text="Bonett's small-sample adjustment: 5 times the planned ICC more items (e.g. 4 "
        "at an ICC of 0.8), only when k = 2 and the ICC is 0.7 or more.",
    )


class PowerForm(forms.Form):
    """Walter, Eliasziw & Donner (1998): items to show the ICC is above rho0."""

    rho0 = _rho(
        "ICC under the null (rho0)",
        0.6,
        ICC_UNIT + " The value to rule out (e.g. the least agreement that would be acceptable).",
    )
    rho1 = _rho("ICC expected (rho1)", 0.8, ICC_UNIT + " The agreement you expect; above rho0.")
    k = _k("Raters per item (k)", 3)
    alpha = _prob("Significance level (alpha)", 0.05, ALPHA_UNIT)
    power = _prob("Power", 0.8, POWER_UNIT)
    tails = forms.TypedChoiceField(label="Test", choices=TAILS, coerce=int, initial=1)


class DifferenceForm(forms.Form):
    """Two ICCs: the jury's above the clinicians' by at least d (an approximation)."""

    rho_low = _rho("Clinicians' ICC(1)", 0.6, ICC_UNIT + " The clinicians' expected agreement.")
    difference = forms.FloatField(
        label="Jury's ICC above it by at least",
        min_value=0.01,
        max_value=0.99,
        initial=0.15,
        help_text="In ICC units (0 to 1): the smallest gap worth showing, e.g. 0.15.",
    )
    k_low = _k("Clinicians per item", 2, "How many clinicians rate each item: a count.")
    k_high = _k("Jury judges per item", 3, "How many LLM judges score each item: a count.")
    alpha = _prob("Significance level (alpha)", 0.05, ALPHA_UNIT)
    power = _prob("Power", 0.8, POWER_UNIT)
    tails = forms.TypedChoiceField(label="Test", choices=TAILS, coerce=int, initial=1)


class SimulationForm(forms.Form):
    """A simulated study from planned variance components."""

    item_sd = forms.FloatField(
        label="Item SD",
        min_value=0.0,
        initial=1.0,
        help_text=SD_UNIT + " How much the items' true scores differ.",
    )
    rater_sd = forms.FloatField(
        label="Rater SD (leniency)",
        min_value=0.0,
        initial=0.3,
        help_text=SD_UNIT + " How much raters differ in their mean score (leniency).",
    )
    error_sd = forms.FloatField(
        label="Error SD",
        min_value=0.0,
        initial=0.7,
        help_text=SD_UNIT + " The noise of one rating of one item.",
    )
    n_items = forms.IntegerField(
        label="Items",
        min_value=3,
        max_value=100_000,
        initial=60,
        help_text="Model outputs rated in each simulated study: a count.",
    )
    raters_per_item = forms.IntegerField(
        label="Raters per item (k)",
        min_value=2,
        max_value=1000,
        initial=2,
        help_text="How many clinicians rate each item: a count.",
    )
    n_raters = forms.IntegerField(
        label="Raters in the study (R)",
        min_value=2,
        max_value=1000,
        initial=4,
        help_text="Clinicians in the panel, a count. k = R: every rater rates every item; "
        "k < R: each item gets k of the R.",
    )
    form = forms.ChoiceField(
        label="ICC form",
        choices=[(f, f) for f in FORMS]
        + [(MEDHELM_PAIRS, "MedHELM: mean ICC(3,2) over clinician pairs (k = 2)")],
        initial="ICC(1,1)",
        help_text=(
            "Incomplete designs (k < R): ICC(1,1), ICC(1,k) or MedHELM's clinician pairs, "
            "which has no per-study interval (the report bootstraps it): the spread of its "
            "estimates is shown instead."
        ),
    )
    confidence = _prob("Confidence level", 0.95, CONFIDENCE_UNIT)
    n_studies = forms.IntegerField(
        label="Simulated studies",
        min_value=10,
        max_value=MAX_STUDIES,
        initial=500,
        help_text="How many studies to simulate: more give steadier percentiles, take longer.",
    )
    seed = forms.IntegerField(
        label="Seed",
        min_value=0,
        max_value=2**32 - 1,
        initial=1,
        help_text="A whole number: the same seed and inputs give the same answer.",
    )


QUESTIONS: dict[str, type[forms.Form]] = {
    "precision": PrecisionForm,
    "power": PowerForm,
    "difference": DifferenceForm,
    "simulation": SimulationForm,
}
