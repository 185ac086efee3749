"""The planning questions as forms (page and command share the planners in agreement.planning):
each form's fields carry the names the planners use, so a PlanningInputError lands under the
field it names."""

from __future__ import annotations

from django import forms

from agreement.stats.icc_forms import FORMS
from agreement.stats.planning_sim import MAX_STUDIES, MEDHELM_PAIRS

TAILS = [(1, "One-sided (ICC above the null)"), (2, "Two-sided")]


def _rho(label: str, initial: float, **kw: object) -> forms.FloatField:
    return forms.FloatField(label=label, min_value=0.0, max_value=0.999, initial=initial, **kw)


def _k(label: str, initial: int) -> forms.IntegerField:
    return forms.IntegerField(label=label, min_value=2, max_value=1000, initial=initial)


def _prob(label: str, initial: float) -> forms.FloatField:
    return forms.FloatField(label=label, min_value=0.001, max_value=0.999, initial=initial)


class PrecisionForm(forms.Form):
    """Bonett (2002): items for an interval of a given width."""

    rho = _rho("Planned ICC(1)", 0.7)
    k = _k("Raters per item (k)", 3)
    confidence = _prob("Confidence level", 0.95)
    width = forms.FloatField(
        label="Full width of the interval", min_value=0.01, max_value=0.99, initial=0.2
    )
    small_k_correction = forms.BooleanField(
        label="Add Bonett's 5 rho for k = 2 and rho >= 0.7", required=False, initial=True
    )


class PowerForm(forms.Form):
    """Walter, Eliasziw & Donner (1998): items to show the ICC is above rho0."""

    rho0 = _rho("ICC under the null (rho0)", 0.6)
    rho1 = _rho("ICC expected (rho1)", 0.8)
    k = _k("Raters per item (k)", 3)
    alpha = _prob("Significance level (alpha)", 0.05)
    power = _prob("Power", 0.8)
    tails = forms.TypedChoiceField(label="Test", choices=TAILS, coerce=int, initial=1)


class DifferenceForm(forms.Form):
    """Two ICCs: the jury's above the clinicians' by at least d (an approximation)."""

    rho_low = _rho("Clinicians' ICC(1)", 0.6)
    difference = forms.FloatField(
        label="Jury's ICC above it by at least", min_value=0.01, max_value=0.99, initial=0.15
    )
    k_low = _k("Clinicians per item", 2)
    k_high = _k("Jury judges per item", 3)
    alpha = _prob("Significance level (alpha)", 0.05)
    power = _prob("Power", 0.8)
    tails = forms.TypedChoiceField(label="Test", choices=TAILS, coerce=int, initial=1)


class SimulationForm(forms.Form):
    """A simulated study from planned variance components."""

    item_sd = forms.FloatField(label="Item SD", min_value=0.0, initial=1.0)
    rater_sd = forms.FloatField(label="Rater SD (leniency)", min_value=0.0, initial=0.3)
    error_sd = forms.FloatField(label="Error SD", min_value=0.0, initial=0.7)
    n_items = forms.IntegerField(label="Items", min_value=3, max_value=100_000, initial=60)
    raters_per_item = forms.IntegerField(
        label="Raters per item (k)", min_value=2, max_value=1000, initial=2
    )
    n_raters = forms.IntegerField(
        label="Raters in the study (R)",
        min_value=2,
        max_value=1000,
        initial=4,
        help_text="k = R: every rater rates every item; k < R: each item gets k of the R.",
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
    confidence = _prob("Confidence level", 0.95)
    n_studies = forms.IntegerField(
        label="Simulated studies", min_value=10, max_value=MAX_STUDIES, initial=500
    )
    seed = forms.IntegerField(label="Seed", min_value=0, max_value=2**32 - 1, initial=1)


QUESTIONS: dict[str, type[forms.Form]] = {
    "precision": PrecisionForm,
    "power": PowerForm,
    "difference": DifferenceForm,
    "simulation": SimulationForm,
}
