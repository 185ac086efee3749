"""One cell of the comparison: a machine against the clinicians, clinician against
clinician, or the difference of the two, with its interval or the reason it has none.

A statistic that cannot be computed on a cell's data raises ValueError from
agreement.stats: that is data, not a user's mistake, so the cell records the reason
(status "insufficient"). A statistic that can be computed but that the estimability rule
(agreement.stats.estimability, held by the Settings) says cannot be estimated keeps its
counts and loses its number, interval and band (status "not_estimable", with the reason and
the rule's codes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from agreement.analysis.settings import (
    FITTED_CI_METHOD,
    ONEWAY_CI_METHOD,
    TWOWAY_CI_METHOD,
    Settings,
    ci_method_text,
)
from agreement.analysis.steps import CellSteps, run_cells
from agreement.stats import (
    ALPHA_LEVELS,
    MEDHELM_MIN_SHARED_ITEMS,
    NotEstimableError,
    clinician_pairwise,
    koo_li_band,
    koo_li_interval_band,
    machine_vs_clinicians,
)
from agreement.stats.batch import Bootstraps
from agreement.stats.medhelm import (
    CLINICIAN_FORMS,
    FITTED_METHOD,
    MACHINE_FITTED,
    MACHINE_FORMS,
    MACHINE_RESULTS,
    ONEWAY,
    TWOWAY,
    ClinicianPairwiseStatistic,
    FormChoice,
    choose_clinician_form,
    clinician_alpha_named,
    clinician_alpha_twoway,
    clinician_oneway,
    clinician_twoway,
    machine_fitted_statistics,
    machine_form,
    machine_vs_clinicians_fitted,
    machine_with_alpha_statistics,
)

#: The forms computed from one model fit with a closed-form interval (no resampling): their
#: point function and interval text.
MODEL_FORMS: dict[str, tuple[Callable[..., Any], str]] = {
    ONEWAY: (clinician_oneway, ONEWAY_CI_METHOD),
    TWOWAY: (clinician_twoway, TWOWAY_CI_METHOD),
}

#: Krippendorff's alpha beside the ICC: per level its estimate and interval (same resamples).
ALPHA_COLUMNS = [
    f"alpha_{level}{part}" for level in ALPHA_LEVELS for part in ("", "_ci_low", "_ci_high")
]
CELL_COLUMNS = [
    "section",
    "row_group",
    "row",
    "column_kind",
    "column",
    "statistic",
    "estimate",
    "ci_low",
    "ci_high",
    "ci_method",
    "confidence",
    "n_items",
    "n_raters",
    "n_pairs",
    "n_resamples",
    "n_valid_resamples",
    "band",
    "point_band",
    "status",
    "reason",
    "rule_codes",
    "n_pairs_excluded",
    "pairs_excluded",
    "dropped_raters",
    "design",
    "clinician_form",
    "form_reason",
    "machine_form",
    "ratings_per_clinician",
    *ALPHA_COLUMNS,
]
NOT_ESTIMABLE = "not estimable"


def _finite(x: float) -> bool:
    return x is not None and bool(np.isfinite(x))


def cell(**values: Any) -> dict[str, Any]:
    """A row of CELL_COLUMNS: `values`, the rest None."""
    row = dict.fromkeys(CELL_COLUMNS)
    row.update(values)
    return row


def result_fields(boot: Any, s: Settings) -> dict[str, Any]:
    """Estimate, interval, bands and status of a bootstrap result."""
    lo, hi = boot.ci_low, boot.ci_high
    ok = _finite(lo) and _finite(hi)
    return {
        "estimate": boot.estimate,
        "ci_low": lo if ok else None,
        "ci_high": hi if ok else None,
        "ci_method": ci_method_text(
            s.method, n_items=boot.n_items, jackknife_units=boot.jackknife_units
        ),
        "confidence": s.confidence,
        "n_resamples": s.n_resamples,
        "n_valid_resamples": boot.n_valid,
        "band": koo_li_interval_band(lo, hi) if ok else "undefined",
        "point_band": koo_li_band(boot.estimate),
        "status": "ok",
        "reason": None
        if ok
        else f"bootstrap interval undefined ({boot.n_valid} of {s.n_resamples} resamples valid)",
    }


def alpha_fields(boots: dict[str, Any]) -> dict[str, Any]:
    """ALPHA_COLUMNS of the "alpha_<level>" bootstrap results in ``boots`` (no interval where
    too few resamples gave one)."""
    out: dict[str, Any] = {}
    for level in ALPHA_LEVELS:
        boot = boots[f"alpha_{level}"]
        ok = _finite(boot.ci_low) and _finite(boot.ci_high)
        out[f"alpha_{level}"] = boot.estimate if _finite(boot.estimate) else None
        out[f"alpha_{level}_ci_low"] = boot.ci_low if ok else None
        out[f"alpha_{level}_ci_high"] = boot.ci_high if ok else None
    return out


def insufficient(reason: str) -> dict[str, Any]:
    """A cell with no estimate, saying why."""
    return {"status": "insufficient", "reason": reason, "band": "undefined"}


def not_estimable(codes: tuple[str, ...], reason: str) -> dict[str, Any]:
    """A cell the rule says cannot be estimated: no number, interval or band (alpha's
    included: the rule is about the cell's data); the reason."""
    return {
        **dict.fromkeys(ALPHA_COLUMNS),
        "estimate": None,
        "ci_low": None,
        "ci_high": None,
        "band": NOT_ESTIMABLE,
        "point_band": NOT_ESTIMABLE,
        "status": "not_estimable",
        "reason": reason,
        "rule_codes": ",".join(codes),
    }


def ruled(fields: dict[str, Any], *, n_shared: int | None, s: Settings) -> dict[str, Any]:
    """`fields` of a computed cell, or the same counts marked not estimable by the rule."""
    verdict = s.rule.check_cell(
        estimate=fields["estimate"],
        ci_low=fields["ci_low"],
        ci_high=fields["ci_high"],
        n_shared=n_shared,
        confidence=s.confidence,
    )
    if verdict.estimable:
        return fields
    reason = verdict.reason + (f"; {fields['reason']}" if fields.get("reason") else "")
    return {**fields, **not_estimable(verdict.codes, reason)}


def _items_with(sub: pd.DataFrame, **where: str) -> set:
    mask = np.ones(len(sub), dtype=bool)
    for col, value in where.items():
        mask &= (sub[col] == value).to_numpy()
    return set(sub.loc[mask, "item"])


def only_clinicians_and(sub: pd.DataFrame, machine: str) -> pd.DataFrame:
    """The clinicians' rows and one machine's: all a machine cell reads (same result as the
    whole table, less to standardise)."""
    return sub.loc[(sub["rater_kind"] == "clinician") | (sub["rater"] == machine)]


def _too_few_items(sub: pd.DataFrame, machine: str, s: Settings) -> dict[str, Any] | None:
    clin_items = _items_with(sub, rater_kind="clinician")
    machine_items = _items_with(sub, rater=machine)
    both = len(clin_items & machine_items)
    if not machine_items:
        return insufficient(f"no scores from {machine} on these items")
    if both < s.min_items:
        return insufficient(
            f"fewer than {s.min_items} items with clinician ratings and {machine} scores ({both})"
        )
    return None


def clinician_design(sub: pd.DataFrame) -> str:
    """ "complete" where every item of `sub` is rated by all of its clinicians, else
    "incomplete" (each item by some of them): the intervals' simulated coverage differs."""
    return choose_clinician_form(sub.loc[sub["rater_kind"] == "clinician"]).design


def _form_fields(choice: FormChoice) -> dict[str, Any]:
    return {
        "statistic": CLINICIAN_FORMS[choice.form],
        "clinician_form": choice.form,
        "form_reason": choice.reason,
        "design": choice.design,
    }


def fitted_boot(s: Settings) -> dict[str, Any]:
    """The bootstrap arguments of the fitted machine side: the report's, with the interval
    the simulation chose for it (FITTED_METHOD, whatever the report's setting)."""
    return {**s.boot(), "method": FITTED_METHOD}


def machine_cell(sub: pd.DataFrame, machine: str, s: Settings) -> dict[str, Any]:
    """Estimate, interval, counts (or the reason there are none) for one machine: MedHELM's
    ICC(3,2) on z-scores, or where the clinicians get the two-way form on an incomplete
    design the same statistic with their offsets fitted (agreement.stats.medhelm.fitted)."""
    return run_cells([machine_cell_steps(sub, machine, s)])[0]


def machine_cell_steps(sub: pd.DataFrame, machine: str, s: Settings) -> CellSteps[dict[str, Any]]:
    """:func:`machine_cell` as steps (agreement.analysis.steps)."""
    sub = only_clinicians_and(sub, machine)
    too_few = _too_few_items(sub, machine, s)
    if too_few is not None:
        return too_few
    choice = choose_clinician_form(
        sub.loc[sub["rater_kind"] == "clinician"], asked=s.clinician_form
    )
    side = machine_form(choice.form, choice.design)
    fitted = side == MACHINE_FITTED
    try:
        if fitted:
            point = machine_vs_clinicians_fitted(sub, machine=machine, on_degenerate="drop")
        else:
            point = machine_vs_clinicians(sub, machine=machine, on_degenerate="drop")
        if point.n_items < s.min_items:
            return insufficient(
                f"fewer than {s.min_items} items left after dropping clinicians with no "
                f"z-score ({point.n_items})"
            )
        # With the offsets fitted, the ICC and interval alpha are the fitted ones; ordinal alpha
        # (ranks of the z-scores) has no fitted counterpart and stays MedHELM's, computed alone
        asked = [
            Bootstraps(
                machine_with_alpha_statistics(
                    sub,
                    machine=machine,
                    on_degenerate="drop",
                    results=("alpha_ordinal",) if fitted else MACHINE_RESULTS,
                ),
                **s.boot(),
            )
        ]
        if fitted:
            asked.append(
                Bootstraps(
                    machine_fitted_statistics(sub, machine=machine, on_degenerate="drop"),
                    **fitted_boot(s),
                )
            )
        boots = yield tuple(asked)
    except ValueError as exc:  # the data allow no estimate
        return insufficient(str(exc))
    fields = {
        **result_fields(boots["icc"], s),
        **alpha_fields(boots),
        "n_items": point.n_items,
        "n_raters": point.n_clinicians,
        "dropped_raters": ", ".join(map(str, point.dropped_raters)) or None,
        "design": choice.design,
        "machine_form": side,
    }
    if fitted:
        fields["statistic"] = MACHINE_FORMS[side]
        fields["ci_method"] = FITTED_CI_METHOD
        fields["ratings_per_clinician"] = point.ratings_per_clinician
    return ruled(fields, n_shared=point.n_items, s=s)


def clinician_cell(sub: pd.DataFrame, s: Settings) -> dict[str, Any]:
    """Clinician-clinician agreement (:func:`clinician_cell_steps`, run alone)."""
    return run_cells([clinician_cell_steps(sub, s)])[0]


def clinician_cell_steps(sub: pd.DataFrame, s: Settings) -> CellSteps[dict[str, Any]]:
    """Clinician-clinician agreement in the form the design decides
    (agreement.stats.medhelm.form_choice): MedHELM's mean pairwise ICC(3,2), or on an
    incomplete design the two-way ICC(C,2) (or the one-way form); with its interval (or the
    reason there is none) and the form and why, recorded in the cell.

    The pairs are MedHELM's (sharing >= 2 items); those sharing fewer items than the rule's
    minimum stay out of the mean and are counted (none is left out for its value: see
    agreement.stats.estimability); the estimate itself is then held to the rule as a cell."""
    clin = sub.loc[sub["rater_kind"] == "clinician"]
    per_item = clin.groupby("item")["rater"].nunique()
    shared = int((per_item >= 2).sum())
    choice = choose_clinician_form(clin, asked=s.clinician_form)
    if shared < s.min_items:
        return {
            **insufficient(
                f"fewer than {s.min_items} items rated by 2 or more clinicians ({shared})"
            ),
            **_form_fields(choice),
        }
    if choice.form in MODEL_FORMS:
        fields = yield from _model_cell_steps(clin, s, choice.form)
    else:
        fields = yield from _pairwise_cell_steps(clin, s)
    return {**fields, **_form_fields(choice)}


def _pairwise_cell_steps(clin: pd.DataFrame, s: Settings) -> CellSteps[dict[str, Any]]:
    medhelm = {"min_shared_items": MEDHELM_MIN_SHARED_ITEMS, "on_degenerate": "drop"}
    try:
        point = clinician_pairwise(clin, **medhelm, rule=s.rule)
        pairwise = ClinicianPairwiseStatistic(clin, **medhelm, rule=s.rule)
        alphas = yield (
            Bootstraps({"icc": pairwise}, **s.boot()),
            Bootstraps(clinician_alpha_named(clin, on_degenerate="drop"), **s.boot()),
        )
        boot = alphas["icc"]
    except NotEstimableError as exc:  # every pair left out by the rule
        return {**not_estimable(exc.codes, str(exc)), "n_pairs": 0, "n_pairs_excluded": exc.count}
    except ValueError as exc:  # the data allow no estimate
        return insufficient(str(exc))
    fields = {
        **result_fields(boot, s),
        **alpha_fields(alphas),
        "n_items": point.n_items,
        "n_raters": point.n_clinicians,
        "n_pairs": point.n_pairs,
        "n_pairs_excluded": point.n_pairs_excluded,
        "pairs_excluded": point.excluded_text or None,
        "dropped_raters": ", ".join(map(str, point.dropped_raters)) or None,
    }
    return ruled(fields, n_shared=None, s=s)


def _model_cell_steps(clin: pd.DataFrame, s: Settings, form: str) -> CellSteps[dict[str, Any]]:
    """The two-way ICC(C,2) or one-way ICC(1,2) with its F-type interval; alpha as in every
    cell (item bootstrap)."""
    point_of, ci_method = MODEL_FORMS[form]
    try:
        point = point_of(clin, on_degenerate="drop", confidence=s.confidence)
        alpha_statistics = clinician_alpha_named(clin, on_degenerate="drop")
        alphas = yield (Bootstraps(alpha_statistics, **s.boot()),)
        two_way_alpha = (
            clinician_alpha_twoway(clin, on_degenerate="drop", confidence=s.confidence)
            if form == TWOWAY and clinician_design(clin) == "incomplete"
            else None
        )
    except ValueError as exc:  # the data allow no estimate
        return insufficient(str(exc))
    alpha = alpha_fields(alphas)
    if two_way_alpha is not None:  # interval alpha with the offsets fitted (Wald's interval)
        ok = _finite(two_way_alpha.ci_low) and _finite(two_way_alpha.ci_high)
        alpha["alpha_interval"] = two_way_alpha.estimate
        alpha["alpha_interval_ci_low"] = two_way_alpha.ci_low if ok else None
        alpha["alpha_interval_ci_high"] = two_way_alpha.ci_high if ok else None
    lo, hi = point.ci_low, point.ci_high
    ok = _finite(lo) and _finite(hi)
    fields = {
        "estimate": point.icc,
        "ci_low": lo if ok else None,
        "ci_high": hi if ok else None,
        "ci_method": ci_method,
        "confidence": s.confidence,
        "band": koo_li_interval_band(lo, hi) if ok else "undefined",
        "point_band": koo_li_band(point.icc),
        "status": "ok",
        "reason": None if ok else "F interval undefined (no variation within or between items)",
        **alpha,
        "n_items": point.n_items,
        "n_raters": point.n_clinicians,
        "dropped_raters": ", ".join(map(str, point.dropped_raters)) or None,
    }
    return ruled(fields, n_shared=None, s=s)
