"""The questionnaire's presentation rules: which errors stand next to an item."""

from __future__ import annotations

from delphi.errors import DelphiError
from delphi.models import RoundItem
from delphi.presenters import errors_for


def test_errors_are_placed_by_their_field_or_by_the_missing_answer_line():
    item = RoundItem(pk=3, name="Diagnosis")
    errors = [
        DelphiError("answers['Diagnosis'].rating: must be 1-9", field="answers.3.rating"),
        DelphiError("answers['Diagnosis']: give a rating", field="answers.3"),
        DelphiError("answers['Other']: give a rating", field="answers.33"),
        DelphiError("comprehensiveness: must be 1-5"),
        "Diagnosis: no rating",
        "Diagnosis triage: no rating",
    ]
    assert errors_for(item, errors) == [
        "answers['Diagnosis'].rating: must be 1-9",
        "answers['Diagnosis']: give a rating",
        "Diagnosis: no rating",
    ]
