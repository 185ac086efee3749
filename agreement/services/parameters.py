"""A report's parameters: defaults filled in, types and ranges checked, the seed drawn.

``min_shared_items`` and ``max_ci_width`` are the estimability rule's (with the bounds
[-1, 1]; agreement.stats.estimability), ``clinician_form`` the clinician-clinician form
asked for: stored with the snapshot like every parameter, so a report states the rule and
the form it was computed under."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from agreement.analysis import CI_METHODS, DEFAULT_MAX_CI_WIDTH
from agreement.errors import ParameterErrors
from agreement.stats.estimability import WIDEST
from agreement.stats.medhelm import BY_DESIGN, REQUESTABLE_FORMS

DEFAULT_PARAMETERS: dict[str, Any] = {
    "n_resamples": 1000,
    "confidence": 0.95,
    "ci_method": "bca",
    "values": "latest",
    "min_items": 3,
    "min_shared_items": 2,
    "max_ci_width": DEFAULT_MAX_CI_WIDTH,
    # Judge scores from flagged verdicts (jury.verdict_flags) are in the table by default.
    "exclude_flagged": False,
    # the clinician-clinician form: decided per cell by the design, or one form in every cell
    # (agreement.stats.medhelm.form_choice)
    "clinician_form": BY_DESIGN,
}
MAX_RESAMPLES = 100_000
MAX_SEED = 2**32 - 1
#: field -> (lowest, highest) of the whole-number parameters, in the order they are checked.
WHOLE_NUMBER_RANGES = {
    "n_resamples": (10, MAX_RESAMPLES),
    "min_items": (2, 1000),
    "min_shared_items": (2, 1000),
    "seed": (0, MAX_SEED),
}


def _whole_number(p: dict[str, Any], key: str, errors: dict[str, str]) -> None:
    low, high = WHOLE_NUMBER_RANGES[key]
    try:
        value = int(p[key])
        if isinstance(p[key], float) and p[key] != value:
            raise ValueError
    except (TypeError, ValueError):
        errors[key] = "must be a whole number"
        return
    if not low <= value <= high:
        errors[key] = f"must be between {low} and {high}"
    p[key] = value


def _confidence(p: dict[str, Any], errors: dict[str, str]) -> None:
    try:
        p["confidence"] = float(p["confidence"])
    except (TypeError, ValueError):
        errors["confidence"] = "must be a number"
        return
    if not 0.5 <= p["confidence"] < 1:
        errors["confidence"] = "must be at least 0.5 and below 1"


def _max_ci_width(p: dict[str, Any], errors: dict[str, str]) -> None:
    value = p["max_ci_width"]
    try:
        if isinstance(value, bool):
            raise TypeError
        p["max_ci_width"] = float(value)
    except (TypeError, ValueError):
        errors["max_ci_width"] = "must be a number"
        return
    # `not a < x <= b` also refuses NaN; infinity is above the highest width.
    if not 0 < p["max_ci_width"] <= WIDEST:
        errors["max_ci_width"] = f"must be above 0 and at most {WIDEST:g} (the width of [-1, 1])"


def normalise_parameters(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults filled in, types checked, and a random seed drawn (and so recorded) when none
    is given. Raises ParameterErrors naming every field at fault."""
    unknown = set(parameters) - {*DEFAULT_PARAMETERS, "seed", "title"}
    if unknown:
        raise ParameterErrors({k: "unknown parameter" for k in sorted(unknown)})
    p = {**DEFAULT_PARAMETERS, **{k: v for k, v in parameters.items() if v is not None}}
    if p.get("seed") in (None, ""):
        p["seed"] = secrets.randbelow(MAX_SEED + 1)
    errors: dict[str, str] = {}
    for key in WHOLE_NUMBER_RANGES:
        _whole_number(p, key, errors)
    _confidence(p, errors)
    _max_ci_width(p, errors)
    if p["ci_method"] not in CI_METHODS:
        errors["ci_method"] = f"must be one of {sorted(CI_METHODS)}"
    if p["values"] not in ("latest", "first"):
        errors["values"] = "must be 'latest' or 'first'"
    if p["clinician_form"] not in REQUESTABLE_FORMS:
        errors["clinician_form"] = (
            f"must be one of {', '.join(REQUESTABLE_FORMS)}, got {p['clinician_form']!r}"
        )
    if not isinstance(p["exclude_flagged"], bool):
        errors["exclude_flagged"] = "must be true or false"
    p["title"] = str(p.get("title") or "").strip()[:300]
    if errors:
        raise ParameterErrors(errors)
    return p
