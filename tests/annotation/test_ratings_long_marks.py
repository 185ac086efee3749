"""The long ratings export (ratings-long.csv) marks the ratings of attention checks and of
calibration items, as the raw exports mark the checks; its import reads the marks, checks
them against the study's own (a mismatch is refused, naming the line), and a study with the
same items and marks exports the same file again."""

from __future__ import annotations

import json

import pytest

from annotation import services
from annotation.errors import LongFileRefused
from annotation.models import Assignment, ImportedRating, Item
from annotation.selectors import LONG_RATING_COLUMNS, ratings_long_rows
from medhelm_site.common.csv_export import csv_text
from tests.factories import FULL_ANSWERS, UserFactory, make_study_with_members

pytestmark = pytest.mark.django_db

EXPECTED = {"accuracy": [4, 5]}
REFERENCE = {"accuracy": 4, "clarity": 5}


def _mark(study, coordinator, check: Item, calibration: Item) -> None:
    services.mark_attention_check(
        study=study, item_id=check.pk, expected=EXPECTED, note="", actor=coordinator
    )
    services.mark_calibration_item(
        study=study, item_id=calibration.pk, reference=REFERENCE, note="", actor=coordinator
    )


@pytest.fixture
def rated():
    """Item 0 an attention check, item 1 a calibration item; every assignment submitted."""
    setup = make_study_with_members(n_items=4, n_clinicians=2, k=2)
    check, calibration = setup.study.items.order_by("pk")[:2]
    _mark(setup.study, setup.coordinator, check, calibration)
    for a in Assignment.objects.filter(study=setup.study).exclude(status="withdrawn"):
        services.submit_assignment(assignment_id=a.pk, clinician=a.clinician, answers=FULL_ANSWERS)
    return setup, check, calibration


def _copy(study, *, marked: bool):
    """A study with the same rubric and items (and, if `marked`, the same marks)."""
    coordinator = UserFactory()
    criteria = list(study.criteria.order_by("position").values(*services.CRITERION_FIELDS))
    copy = services.create_study(name="Copy", created_by=coordinator, criteria=criteria)
    rows = [
        services.ItemRow(
            external_id=i.external_id,
            input_text=i.input_text,
            output_text=i.output_text,
            model_name=i.model_name,
        )
        for i in Item.objects.filter(study=study).order_by("pk")
    ]
    services.create_items(study=copy, rows=rows, actor=coordinator)
    if marked:
        check, calibration = copy.items.order_by("pk")[:2]
        _mark(copy, coordinator, check, calibration)
    return copy, coordinator


def _file(study) -> bytes:
    return csv_text(LONG_RATING_COLUMNS, ratings_long_rows(study=study)).encode()


def test_the_long_export_marks_checks_and_calibration_items_per_criterion(rated):
    setup, check, calibration = rated
    rows = ratings_long_rows(study=setup.study)
    marks = {
        (r["external_id"], r["criterion"]): (
            r["attention_check"],
            r["expected_low"],
            r["expected_high"],
            r["calibration_item"],
            r["calibration_reference"],
        )
        for r in rows
    }
    assert marks[(check.external_id, "accuracy")] == (True, 4, 5, False, None)
    assert marks[(check.external_id, "clarity")] == (True, None, None, False, None)
    assert marks[(calibration.external_id, "accuracy")] == (False, None, None, True, 4)
    assert marks[(calibration.external_id, "completeness")] == (False, None, None, True, None)
    ordinary = [
        m
        for (ext, _), m in marks.items()
        if ext not in (check.external_id, calibration.external_id)
    ]
    assert ordinary and set(ordinary) == {(False, None, None, False, None)}
    header = _file(setup.study).decode().splitlines()[0]
    assert header.endswith(
        "attention_check,expected_low,expected_high,calibration_item,calibration_reference"
    )


def test_a_marked_file_imports_into_a_study_with_the_same_marks_and_round_trips(rated):
    setup, _, _ = rated
    data = _file(setup.study)
    assert b",True," in data  # marked rows travel in the file
    copy, coordinator = _copy(setup.study, marked=True)
    summary = services.import_ratings(study=copy, data=data, name="r.csv", actor=coordinator)
    assert summary.created == data.decode().count("\r\n") - 1
    assert ImportedRating.objects.filter(study=copy).count() == summary.created
    assert _file(copy) == data
    again = services.import_ratings(study=copy, data=data, name="r.csv", actor=coordinator)
    assert (again.created, again.unchanged) == (0, summary.created)


def test_marks_the_study_does_not_share_are_refused_naming_the_line(rated):
    setup, check, _ = rated
    data = _file(setup.study)
    copy, coordinator = _copy(setup.study, marked=False)
    with pytest.raises(LongFileRefused) as info:
        services.import_ratings(study=copy, data=data, name="r.csv", actor=coordinator)
    problems = {(e.column, e.reason.split(":")[0]) for e in info.value.errors}
    assert problems == {
        (
            "attention_check",
            "the file marks this item as an attention check, but this study does not",
        ),
        (
            "expected_low",
            "an expected range is given, but this study's attention checks name none "
            "for accuracy of this item",
        ),
        (
            "calibration_item",
            "the file marks this item as a calibration item, but this study does not",
        ),
        ("calibration_reference", "the calibration reference 4 for accuracy differs"),
        ("calibration_reference", "the calibration reference 5 for clarity differs"),
    }
    lines = data.decode().splitlines()
    first = next(e for e in info.value.errors if e.column == "attention_check")
    assert lines[first.line - 1].startswith(f"{check.external_id},")
    assert not ImportedRating.objects.filter(study=copy).exists()


def test_a_different_range_an_unmarked_item_and_a_bad_flag_are_named(rated):
    setup, check, _ = rated
    ordinary = setup.study.items.order_by("pk")[3]
    head = ",".join(LONG_RATING_COLUMNS)
    text = "\n".join(
        [
            head,
            f"{check.external_id},{check.model_name},X1,accuracy,5,,true,3,5,false,",
            f"{check.external_id},{check.model_name},X1,clarity,5,,false,,,,",
            f"{ordinary.external_id},{ordinary.model_name},X1,accuracy,5,,maybe,,,,",
        ]
    )
    with pytest.raises(LongFileRefused) as info:
        services.import_ratings(study=setup.study, data=text.encode(), name="r.csv", actor=None)
    assert [(e.line, e.column, e.reason) for e in info.value.errors] == [
        (
            2,
            "expected_low",
            "the expected range 3-5 differs from this study's attention check (4-5)",
        ),
        (
            3,
            "attention_check",
            "this item is an attention check in this study, but the file says it is not one "
            "(its ratings stay out of the agreement statistics)",
        ),
        (4, "attention_check", "'maybe' is neither true nor false (blank: not stated)"),
    ]


def test_jsonl_marks_may_be_json_booleans_and_blank_marks_state_nothing(rated):
    setup, check, calibration = rated
    lines = [
        {
            "external_id": check.external_id,
            "model": check.model_name,
            "rater": "X1",
            "criterion": "accuracy",
            "value": 5,
            "attention_check": True,
            "expected_low": 4,
            "expected_high": 5,
            "calibration_item": False,
        },
        {
            "external_id": calibration.external_id,
            "model": calibration.model_name,
            "rater": "X1",
            "criterion": "accuracy",
            "value": 2,
            "attention_check": "",
            "calibration_item": None,
        },
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    summary = services.import_ratings(study=setup.study, data=data, name="r.jsonl", actor=None)
    assert summary.created == 2


def test_a_genuinely_unknown_column_is_named(rated):
    setup, check, _ = rated
    text = f"{','.join(LONG_RATING_COLUMNS)},colour\n"
    text += f"{check.external_id},{check.model_name},X1,accuracy,5,,true,4,5,false,,red\n"
    with pytest.raises(LongFileRefused) as info:
        services.import_ratings(study=setup.study, data=text.encode(), name="r.csv", actor=None)
    [error] = info.value.errors
    assert (error.line, error.column) == (1, "colour")
    assert error.reason.startswith("unknown column 'colour'; known: external_id, model,")
