"""A judge definition file (jury.judge_definitions, `manage.py load_judges`) sets exactly the
fields an operator sets in the admin form: every one of them round-trips, and none other is
taken, so that the two lists cannot drift apart again."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from jury.errors import JuryError
from jury.forms import JudgeAdminForm
from jury.judge_definitions import judge_from_definition, load_judge_files
from jury.models import Judge

pytestmark = pytest.mark.django_db

# A value for every field of the admin form, none of them the model's default.
EVERY_FIELD = {
    "name": "every-field",
    "description": "Scores accuracy only; a second opinion to the clinicians.",
    "provider": "openai",
    "model_id": "gpt-4o-mini",
    "endpoint": "https://api.openai.com/v1",
    "api_key_env": "MEDHELM_JUDGE_KEY_OPENAI",
    "params": {"temperature": 0, "max_tokens": 700},
    "structured_output": "json_object",
    "weight": 2.5,
    "price_input_per_mtok": "0.15",
    "price_output_per_mtok": "0.60",
    "max_concurrency": 3,
    "requests_per_minute": 120,
    "timeout_seconds": 45.0,
    "retry_budget_seconds": 1234,
    "is_active": False,
}


def test_the_example_sets_every_field_of_the_admin_form():
    # the guard of the round trip below: a new admin field needs a value here
    assert set(EVERY_FIELD) == set(JudgeAdminForm.base_fields)


def test_a_definition_sets_every_field_the_admin_form_sets(tmp_path):
    path = tmp_path / "every-field.json"
    path.write_text(json.dumps(EVERY_FIELD))
    [(judge, created)] = load_judge_files([path])
    assert created
    stored = Judge.objects.get(pk=judge.pk)
    for field, value in EVERY_FIELD.items():
        expected = Decimal(value) if field.startswith("price_") else value
        assert getattr(stored, field) == expected, field


@pytest.mark.parametrize("field", ["id", "created_at"])
def test_a_definition_sets_no_field_the_admin_form_does_not(field):
    assert field not in JudgeAdminForm.base_fields
    with pytest.raises(JuryError) as info:
        judge_from_definition({"name": "x", "provider": "openai", "model_id": "m", field: 1})
    assert info.value.field == field
    assert "unknown fields" in info.value.message
