"""A report's parameters: defaults, ranges and types, every field at fault named at once."""

from __future__ import annotations

import pytest

from agreement.errors import AgreementError
from agreement.services import DEFAULT_PARAMETERS, MAX_SEED, normalise_parameters


def test_defaults_are_filled_in_and_a_seed_is_drawn():
    p = normalise_parameters({"title": "  A title  "})
    assert {k: p[k] for k in DEFAULT_PARAMETERS} == DEFAULT_PARAMETERS
    assert 0 <= p["seed"] <= MAX_SEED and p["title"] == "A title"


def test_whole_numbers_may_come_as_text_or_whole_floats():
    p = normalise_parameters({"n_resamples": "200", "seed": 7.0, "min_items": 4})
    assert (p["n_resamples"], p["seed"], p["min_items"]) == (200, 7, 4)


@pytest.mark.parametrize(
    ("parameters", "errors"),
    [
        ({"colour": "blue"}, {"colour": "unknown parameter"}),
        ({"n_resamples": 2.5}, {"n_resamples": "must be a whole number"}),
        ({"seed": -1}, {"seed": f"must be between 0 and {MAX_SEED}"}),
        ({"confidence": "high"}, {"confidence": "must be a number"}),
        ({"ci_method": "jackknife", "values": "newest"}, {"ci_method", "values"}),
    ],
)
def test_every_field_at_fault_is_named(parameters, errors):
    with pytest.raises(AgreementError) as exc:
        normalise_parameters(parameters)
    found = exc.value.as_dict()
    if isinstance(errors, dict):
        assert found == {field: [message] for field, message in errors.items()}
    else:
        assert set(found) == errors
    assert exc.value.field == next(iter(found))


def test_the_estimability_rule_has_defaults_and_ranges():
    p = normalise_parameters({})
    assert p["max_ci_width"] == DEFAULT_PARAMETERS["max_ci_width"] == 1.0
    assert p["min_shared_items"] == 2  # MedHELM's pairs
    assert normalise_parameters({"max_ci_width": "0.5"})["max_ci_width"] == 0.5
    assert normalise_parameters({"max_ci_width": 2})["max_ci_width"] == 2.0
    for bad, message in (
        (0, "must be above 0 and at most 2 (the width of [-1, 1])"),
        (2.01, "must be above 0 and at most 2 (the width of [-1, 1])"),
        (float("nan"), "must be above 0 and at most 2 (the width of [-1, 1])"),
        ("wide", "must be a number"),
        (True, "must be a number"),
    ):
        with pytest.raises(AgreementError) as exc:
            normalise_parameters({"max_ci_width": bad})
        assert exc.value.as_dict() == {"max_ci_width": [message]}, bad
