"""The methods paragraph of a report, ready to paste into a paper: every number and name in
it (form, resamples, seed, interval, confidence, rule values, counts, package versions,
input hash) is read from the snapshot's stored method record, never written here.

Plain text; latex.py and markdown.py escape it for their files, the page shows it as is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agreement.stats.medhelm.form_choice import ONEWAY, TWOWAY

#: The packages a reader needs to reproduce the numbers, in the order the paragraph names them.
PACKAGES = ("numpy", "pandas", "scipy", "krippendorff", "pingouin")
NOT_RECORDED = "not recorded"


def _count(n: Any, singular: str, plural: str | None = None) -> str:
    if not isinstance(n, int):
        return f"an unrecorded number of {plural or singular + 's'}"
    return f"{n:,} {singular if n == 1 else (plural or singular + 's')}"


def _sentence(text: Any) -> str:
    """A stored clause as a sentence: first letter capitalised, one final full stop."""
    text = str(text).strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text.endswith(".") else text + "."


def _versions(method: Mapping[str, Any]) -> str:
    versions = method.get("package_versions") or {}
    names = [f"{p} {versions.get(p, NOT_RECORDED)}" for p in PACKAGES]
    python = versions.get("python")
    return (f"Python {python}, " if python else "") + ", ".join(names)


def _interval(method: Mapping[str, Any]) -> str:
    confidence = method.get("confidence")
    level = f"{float(confidence) * 100:g}%" if isinstance(confidence, int | float) else "The"
    resamples = method.get("n_resamples")
    resamples_text = f"{resamples:,}" if isinstance(resamples, int) else NOT_RECORDED
    return (
        f"{level} confidence intervals come from the {method.get('ci_method', NOT_RECORDED)} "
        f"with {resamples_text} resamples (seed {method.get('seed', NOT_RECORDED)}): "
        f"{method.get('bootstrap', '').rstrip('.')}."
    )


def _interval_choice(method: Mapping[str, Any]) -> str:
    """Which interval each statistic uses and how its coverage was checked (absent from
    reports computed before it was recorded)."""
    record = method.get("intervals") or {}
    by = record.get("by_statistic") or {}
    if not by:
        return ""
    return (
        f"Intervals: machine vs clinicians, {by.get('machine_vs_clinicians', NOT_RECORDED)}; "
        f"clinician vs clinician, {by.get('clinician_clinician', NOT_RECORDED)}"
        + (
            f" (on an incomplete design the two-way form, {by['clinician_clinician_twoway']})"
            if by.get("clinician_clinician_twoway")
            else ""
        )
        + (
            f" (the one-way form, {by['clinician_clinician_oneway']})"
            if by.get("clinician_clinician_oneway")
            else ""
        )
        + "; "
        f"Krippendorff's alpha, {by.get('alpha', NOT_RECORDED)}; differences, "
        f"{by.get('difference', NOT_RECORDED)}"
        + (
            " (where the clinicians get the two-way form on an incomplete design, the machine "
            f"side has the clinicians' offsets fitted: ICC(3,2), {by['machine_vs_clinicians_fitted']}; "
            f"alpha, {by.get('alpha_fitted', NOT_RECORDED)}; differences, "
            f"{by.get('difference_fitted', NOT_RECORDED)})"
            if by.get("machine_vs_clinicians_fitted")
            else ""
        )
        + ". "
        + _sentence(record.get("coverage", ""))
    )


def _estimability(method: Mapping[str, Any]) -> str:
    rule = method.get("estimability") or {}
    if not rule.get("applied"):
        return "No estimability rule was applied to this report."
    low, high = (rule.get("bounds") or [None, None])[:2]
    return (
        f"An estimate is reported as not estimable (and left out of every mean) when it lies "
        f"outside [{low:g}, {high:g}], when its interval is wider than "
        f"{rule.get('max_ci_width')}, or when fewer than {rule.get('min_shared_items')} items "
        f"are shared."
        if isinstance(low, int | float) and isinstance(high, int | float)
        else _sentence(rule.get("text", ""))
    )


def _counts(method: Mapping[str, Any]) -> str:
    n_items = method.get("n_items") or {}
    raters = method.get("n_raters") or {}
    return (
        f"The score table held {_count(n_items.get('in_score_table'), 'item')} "
        f"({_count(n_items.get('rated_by_clinicians'), 'item')} rated by clinicians) scored by "
        f"{_count(raters.get('clinician'), 'clinician')}, {_count(raters.get('judge'), 'LLM judge')} "
        f"and {_count(raters.get('metric'), 'automatic metric')}; clinician ratings were taken "
        f"as their {method.get('values', NOT_RECORDED)} values."
    )


def _sample(method: Mapping[str, Any]) -> str:
    """The draw that chose the clinicians' items: rule, seed, strata, counts (absent from
    reports computed before draws were recorded; None when every item was dealt)."""
    if "sample" not in method:
        return ""
    draw = method["sample"]
    if not draw:
        return "Clinicians were dealt every item of the study (no sample was drawn)."
    unit = "case" if draw.get("paired") else "item"
    drawn = draw.get("n_items_drawn")
    drawn_text = f"{drawn:,}" if isinstance(drawn, int) else NOT_RECORDED
    keys = ", ".join(draw.get("strata_keys") or []) or "no key (one stratum)"
    rule = (
        f"{_count(draw.get('total'), unit)} allocated in proportion to stratum size "
        f"(largest-remainder rounding)"
        if draw.get("rule") == "proportional"
        else "fixed quotas per stratum"
    )
    strata = "; ".join(
        f"{s.get('label')} {s.get('drawn')}/{s.get('population')}" for s in draw.get("strata") or []
    )
    paired = (
        f" Each drawn case brings the outputs of every model for the same input (paired "
        f"design, cases matched by {draw.get('case_key', 'external_id').replace('_', ' ')}); "
        f"{_count(draw.get('unpaired_cases'), 'drawn case')} lacked a model."
        if draw.get("paired")
        else ""
    )
    if draw.get("model_by_pairing"):
        but = ", apart from those that lacked one" if draw.get("unpaired_cases") else ""
        paired += (
            f" The model, asked for as a stratum, was not stratified on: the pairing balances "
            f"it, each of the {_count(draw.get('n_models'), 'model')} answering the same drawn "
            f"cases{but}."
        )
    return (
        f"The items put before clinicians were a stratified random sample "
        f"({drawn_text} of {_count(draw.get('n_items_study'), 'item')}"
        f"; draw {draw.get('draw_id')}, seed {draw.get('seed', NOT_RECORDED)}), stratified by "
        f"{keys}, {rule}; drawn/available {unit}s per stratum: {strata}.{paired} Items not "
        f"drawn stayed in the score table for the jury and the metrics."
    )


def _attention_checks(method: Mapping[str, Any]) -> str:
    """How many planted attention-check items were left out (absent from reports computed
    before checks existed)."""
    n = method.get("attention_checks_excluded")
    if not isinstance(n, int) or isinstance(n, bool):
        return ""
    if n == 0:
        return "No attention-check items were planted."
    return (
        f"{_count(n, 'attention-check item')} (planted, with an obvious answer, to check "
        f"raters' attention) {'was' if n == 1 else 'were'} excluded from every statistic."
    )


def _clinician_form(method: Mapping[str, Any]) -> str:
    """The clinician-clinician form and, where pairs are averaged in some cell, MedHELM's
    pairs rule (left out when the report asked for the one-way or the two-way form in every
    cell)."""
    form = (method.get("forms") or {}).get("clinician_clinician", NOT_RECORDED)
    if method.get("clinician_form") in (ONEWAY, TWOWAY):  # no cell averages pairs
        return f"Clinician-clinician agreement is the {form}."
    return (
        f"Clinician-clinician agreement is the {form}: {method.get('pairwise_rule', NOT_RECORDED)}."
    )


def _calibration(method: Mapping[str, Any]) -> str:
    """The calibration items left out, and each rater's agreement with their reference
    (absent from reports computed before calibration items existed)."""
    record = method.get("calibration")
    if not isinstance(record, Mapping) or not isinstance(record.get("n_items"), int):
        return ""
    n = record["n_items"]
    if n == 0:
        return "No calibration items were used."
    raters = [r for r in record.get("raters") or [] if r.get("n")]
    per_rater = "; ".join(
        f"{r.get('rater')} {_share(r.get('exact'))} exact, mean absolute difference "
        f"{_number(r.get('mean_abs_diff'))}"
        + (
            f", weighted kappa {_number(r.get('weighted_kappa'))}"
            if r.get("weighted_kappa") is not None
            else ""
        )
        for r in raters
    )
    return (
        f"{_count(n, 'calibration item')} with a reference rating agreed by senior clinicians "
        f"{'was' if n == 1 else 'were'} rated by each rater before their other items and "
        f"excluded from every statistic; agreement with the reference (values as first "
        f"submitted; {record.get('kappa', NOT_RECORDED)}): "
        f"{per_rater or 'no rater had rated them'}."
    )


def _share(value: Any) -> str:
    return NOT_RECORDED if not isinstance(value, (int, float)) else f"{round(100 * value)}%"


def _number(value: Any) -> str:
    return NOT_RECORDED if not isinstance(value, (int, float)) else f"{value:.2f}"


def methods_paragraph(method: Mapping[str, Any], *, input_hash: str) -> str:
    """One paragraph stating how the report's numbers were computed, from ``method`` (a
    snapshot's stored method record, as stated by services.stated_method)."""
    forms = method.get("forms") or {}
    parts = [
        f"Agreement of each machine rater (the LLM jury, each judge and each automatic metric) "
        f"with the clinicians was measured by {forms.get('machine_vs_clinicians', NOT_RECORDED)}, "
        f"that is {forms.get('names', '').rstrip('.')}.",
        # absent from reports computed before the machine side was fitted (issue 21)
        _sentence(
            "where the clinicians get the two-way form on an incomplete design, each machine "
            f"was compared with them by {forms['machine_vs_clinicians_fitted']}"
        )
        if forms.get("machine_vs_clinicians_fitted")
        else "",
        f"Each rater's composite score is, {method.get('composite', NOT_RECORDED)}.",
        f"Scores were standardised within rater: {method.get('standardisation', NOT_RECORDED)}.",
        f"The jury score is, {method.get('jury_aggregate', NOT_RECORDED)}.",
        _clinician_form(method),
        # absent from reports computed before alpha was reported
        _sentence(f"Krippendorff's alpha was also computed: {forms['alpha']}")
        if forms.get("alpha")
        else "",
        _interval(method),
        _interval_choice(method),
        _estimability(method),
        f"Judge verdicts flagged as possibly steered by the evaluated output were "
        f"{method.get('flagged_verdicts', NOT_RECORDED)}.",
        _counts(method),
        _sample(method),
        _attention_checks(method),
        _calibration(method),
        f"Computed with medhelm-studio ({_versions(method)}; the ICC forms are checked against "
        f"pingouin's intraclass_corr) on a score table whose SHA-256 hash is {input_hash}.",
    ]
    return " ".join(p for p in parts if p)
