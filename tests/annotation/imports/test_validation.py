"""Checks across rows and against the study (annotation/imports/validation.py): no database
needed."""

from __future__ import annotations

import pytest

from annotation.imports import ParsedImport, item_fingerprint, parse_jsonl, validate_rows
from tests.annotation.imports.factories import GOOD, jsonl, where_reason

TASKS = {"Treatment planning QA": 11, "Planning Treatments": 7}


def _parsed(*rows: dict) -> ParsedImport:
    return parse_jsonl(jsonl(*rows))


def test_validate_resolves_tasks_and_reports_unknown_ones_and_duplicates():
    parsed = _parsed(
        {**GOOD, "external_id": "a", "task": "Treatment planning QA"},
        {**GOOD, "external_id": "b", "task": "Planing Treatments"},
        {**GOOD, "external_id": "a", "task": "Planning Treatments"},
        {**GOOD, "external_id": "a", "model": "other"},
        "{broken",
        {**GOOD, "external_id": "c"},
    )
    rows, errors = validate_rows(parsed=parsed, task_names=TASKS)

    assert [(r.external_id, r.model_name, r.taxonomy_node_id) for r in rows] == [
        ("a", "m", 11),
        ("a", "other", None),
        ("c", "m", None),
    ]
    # Parser errors and row checks together, in file order.
    assert where_reason(errors) == [
        (
            "line 2",
            "unknown task 'Planing Treatments': not a node of the study's taxonomy version "
            "(did you mean 'Planning Treatments'?)",
        ),
        ("line 3", "external_id 'a' with model 'm' appears twice in this file (first at line 1)"),
        ("line 5", "not valid JSON: Expecting property name enclosed in double quotes (column 2)"),
    ]


def test_validate_task_without_taxonomy_version_is_an_error():
    _, errors = validate_rows(parsed=_parsed({**GOOD, "task": "Anything"}), task_names=None)
    assert where_reason(errors) == [
        ("line 1", "task 'Anything' given, but the study has no taxonomy version")
    ]


def test_validate_existing_item_with_same_texts_is_kept_with_other_texts_is_an_error():
    parsed = _parsed(
        {**GOOD, "external_id": "same"}, {**GOOD, "external_id": "changed", "output": "new"}
    )
    old = item_fingerprint(input_text="q", output_text="a", reference_text="")
    rows, errors = validate_rows(
        parsed=parsed, task_names=None, existing={("same", "m"): old, ("changed", "m"): old}
    )
    assert [r.external_id for r in rows] == ["same"]
    assert where_reason(errors) == [
        (
            "line 2",
            "external_id 'changed' with model 'm' is already in this study with a different "
            "output; an import never changes an existing item",
        )
    ]


def test_validate_reports_progress_in_batches():
    parsed = _parsed(*({**GOOD, "external_id": f"c{i}"} for i in range(5)), "[]")
    seen: list[int] = []
    validate_rows(parsed=parsed, task_names=None, progress=seen.append, progress_every=2)
    # The rejected line counts as done from the start; the last call reports the total.
    assert seen == [3, 5, 6]
    assert parsed.total == 6


@pytest.mark.parametrize(
    ("data", "where"), [(b"[]", "line 1"), (b'{"external_id": "a"}', "line 1")]
)
def test_nothing_valid_gives_no_rows(data, where):
    rows, errors = validate_rows(parsed=parse_jsonl(data), task_names=None)
    assert rows == [] and errors and errors[0].where == where
