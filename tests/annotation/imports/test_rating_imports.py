"""Importing human ratings from a long file: good files in both formats, every kind of bad
line (all reported, nothing written), idempotence, conflicts, and what the raters become."""

from __future__ import annotations

import json

import pytest

from annotation import services
from annotation.errors import AnnotationError, LongFileRefused
from annotation.models import (
    Assignment,
    AuditEvent,
    ImportedRating,
    RubricCriterion,
    StudyMembership,
)
from tests.factories import UserFactory, make_study_with_members

HEADER = "external_id,model,rater,criterion,value,comment\n"


@pytest.fixture
def study(db):
    """Six items of model-a, three clinicians assigned; nothing rated yet."""
    return make_study_with_members(n_items=6)


def run(study, text: str, name: str = "ratings.csv"):
    return services.import_ratings(
        study=study.study, data=text.encode("utf-8"), name=name, actor=study.coordinator
    )


def refused(study, text: str, name: str = "ratings.csv") -> list:
    before = ImportedRating.objects.count(), StudyMembership.objects.count()
    with pytest.raises(LongFileRefused) as info:
        run(study, text, name)
    assert (ImportedRating.objects.count(), StudyMembership.objects.count()) == before
    return [(e.line, e.column, e.reason) for e in info.value.errors]


def test_a_good_csv_with_raters_differing_per_item_is_imported(study):
    text = HEADER + (
        "case-0000,model-a,ext-1,accuracy,4,fine\n"
        "case-0000,model-a,ext-2,accuracy,5,\n"
        "case-0001,model-a,ext-2,accuracy,3,\n"
        "case-0001,model-a,ext-3,clarity,2,unclear\n"
    )
    summary = run(study, text)
    assert (summary.file_format, summary.lines, summary.created, summary.unchanged) == (
        "csv",
        4,
        4,
        0,
    )
    assert summary.new_names == ["ext-1", "ext-2", "ext-3"]
    stored = {
        (r.item.external_id, r.rater.pseudonym, r.criterion.key): (r.value, r.comment)
        for r in ImportedRating.objects.select_related("item", "rater", "criterion")
    }
    assert stored[("case-0000", "ext-1", "accuracy")] == (4.0, "fine")
    assert stored[("case-0001", "ext-3", "clarity")] == (2.0, "unclear")


def test_imported_raters_are_flagged_members_without_login_or_assignments(study, client):
    assignments = Assignment.objects.filter(study=study.study).count()
    run(study, HEADER + "case-0000,model-a,ext-1,accuracy,4,\n")
    member = StudyMembership.objects.get(study=study.study, pseudonym="ext-1")
    assert member.is_imported and not member.is_active
    assert member.role == StudyMembership.Role.CLINICIAN
    assert not member.user.is_active and not member.user.has_usable_password()
    assert Assignment.objects.filter(study=study.study).count() == assignments
    services.assign_items(study=study.study, actor=study.coordinator, seed=3)
    assert not Assignment.objects.filter(clinician=member.user).exists()
    # A later native clinician gets a pseudonym no imported rater holds.
    run(study, HEADER + "case-0000,model-a,R04,accuracy,4,\n")
    newcomer = UserFactory()
    native = services.add_member(
        study=study.study, user=newcomer, role="clinician", actor=study.coordinator
    )
    assert native.pseudonym == "R05"
    with pytest.raises(AnnotationError, match="imported rater"):
        services.add_member(
            study=study.study, user=member.user, role="clinician", actor=study.coordinator
        )


def test_jsonl_with_numbers_and_aliases_is_imported(study):
    lines = [
        {
            "item": "case-0002",
            "model": "model-a",
            "pseudonym": "X",
            "criterion": "accuracy",
            "value": 5,
        },
        {"id": "case-0003", "model": "model-a", "rater": "X", "criterion": "clarity", "value": "2"},
    ]
    text = "\n".join(json.dumps(line) for line in lines) + "\n"
    summary = run(study, text, name="ratings.jsonl")
    assert (summary.file_format, summary.created) == ("jsonl", 2)


def test_format_is_detected_from_the_content_without_an_extension(study):
    line = {"external_id": "case-0002", "model": "model-a", "rater": "X", "criterion": "accuracy"}
    summary = run(study, json.dumps({**line, "value": 3}), name="upload")
    assert summary.file_format == "jsonl"
    summary = run(study, HEADER + "case-0002,model-a,Y,accuracy,3,\n", name="upload")
    assert summary.file_format == "csv"


def test_decimals_only_where_the_criterion_allows_them(study):
    text = HEADER + "case-0000,model-a,A,accuracy,3.5,\n"
    assert refused(study, text) == [
        (
            2,
            "value",
            "3.5 is not a whole point of accuracy's scale; a coordinator may allow decimals "
            "for this criterion in the study settings",
        )
    ]
    RubricCriterion.objects.filter(study=study.study, key="accuracy").update(allows_decimals=True)
    assert run(study, text).created == 1
    assert ImportedRating.objects.get().value == 3.5
    # A whole value written as a decimal is a whole point.
    assert run(study, HEADER + "case-0000,model-a,A,clarity,4.0,\n").created == 1


def test_every_bad_line_is_named_with_its_column_and_nothing_is_written(study):
    text = HEADER + (
        "case-0000,model-a,A,accuracy,4,\n"  # good
        "case-9999,model-a,A,accuracy,4,\n"  # unknown item
        "case-0000,model-z,A,accuracy,4,\n"  # item with another model
        "case-0000,model-a,A,acuracy,4,\n"  # unknown criterion
        "case-0000,model-a,A,clarity,seven,\n"  # not a number
        "case-0000,model-a,A,completeness,6,\n"  # off the scale
        "case-0000,model-a,,clarity,4,\n"  # no rater
        "case-0000,model-a,A,accuracy,4,\n"  # twice
        f"case-0000,model-a,{study_pseudonym(study)},clarity,4,\n"  # a native member's pseudonym
        "case-0000,model-a,A,clarity\n"  # short row
        f"case-0001,model-a,{'x' * 40},clarity,4,\n"  # pseudonym too long
        "case-0001,model-a,B,clarity,nan,\n"  # NaN
    )
    errors = refused(study, text)
    assert [(line, column) for line, column, _ in errors] == [
        (3, "external_id"),
        (4, "external_id"),
        (5, "criterion"),
        (6, "value"),
        (7, "value"),
        (8, "rater"),
        (9, "rater"),
        (10, "rater"),
        (11, ""),
        (12, "rater"),
        (13, "value"),
    ]
    reasons = {line: reason for line, _, reason in errors}
    assert "no item 'case-9999' with model 'model-a'" in reasons[3]
    assert "this study has it with model 'model-a'" in reasons[4]
    assert "did you mean 'accuracy'" in reasons[5]
    assert reasons[6] == "'seven' is not a number"
    assert reasons[7] == "6 is outside the scale of completeness (1 to 5)"
    assert reasons[8] == "is empty; every line needs one"
    assert "first at line 2" in reasons[9]
    assert "pseudonym of a member who takes part on this site" in reasons[10]
    assert reasons[11] == "has 4 fields but the header has 6"
    assert "at most 32" in reasons[12]


def study_pseudonym(study) -> str:
    return StudyMembership.objects.get(study=study.study, user=study.clinicians[0]).pseudonym


def test_a_bad_header_and_bad_jsonl_lines_are_reported(study):
    errors = refused(
        study, "external_id,model,rater,criterion,score\ncase-0000,model-a,A,accuracy,4\n"
    )
    assert (
        1,
        "score",
        "unknown column 'score'; known: external_id, model, rater, criterion, value, comment, "
        "attention_check, expected_low, expected_high, calibration_item, calibration_reference",
    ) in errors
    assert (1, "value", "required column missing from the header") in errors
    text = "\n".join(
        [
            '{"external_id": "case-0000", "model": "model-a", "rater": "A", "criterion": "accuracy", "value": 4}',
            "not json",
            "[1, 2]",
            '{"external_id": "case-0000", "model": "model-a", "rater": "A", "criterion": "clarity", "value": [4]}',
            '{"external_id": "case-0000", "model": "model-a", "rater": "A", "criterion": "clarity", "value": 4, "x": 1}',
        ]
    )
    errors = refused(study, text, name="r.jsonl")
    assert [(line, column) for line, column, _ in errors] == [
        (2, ""),
        (3, ""),
        (4, "value"),
        (5, "x"),
    ]
    assert refused(study, "", name="r.csv") == [(0, "", "the file is empty")]


def test_the_same_file_twice_changes_nothing(study):
    text = HEADER + "case-0000,model-a,A,accuracy,4,ok\ncase-0001,model-a,B,clarity,2,\n"
    run(study, text)
    events = AuditEvent.objects.count()
    snapshot = list(ImportedRating.objects.order_by("pk").values())
    summary = run(study, text)
    assert (summary.created, summary.unchanged, summary.new_names) == (0, 2, [])
    assert list(ImportedRating.objects.order_by("pk").values()) == snapshot
    assert AuditEvent.objects.count() == events
    # A file adding to what is stored creates only the new lines.
    more = text + "case-0002,model-a,A,accuracy,5,\n"
    assert (run(study, more).created, run(study, more).created) == (1, 0)


def test_a_conflicting_value_refuses_the_whole_import(study):
    run(study, HEADER + "case-0000,model-a,A,accuracy,4,\n")
    text = HEADER + "case-0001,model-a,A,accuracy,3,\ncase-0000,model-a,A,accuracy,5,\n"
    errors = refused(study, text)
    assert errors == [
        (
            3,
            "value",
            "conflicts with the rating imported before, which has the value 4; an import "
            "never changes a stored rating",
        )
    ]
    assert ImportedRating.objects.count() == 1
    errors = refused(study, HEADER + "case-0000,model-a,A,accuracy,4,other\n")
    assert errors[0][1] == "comment"


def test_the_audit_log_says_what_was_imported_and_by_whom(study):
    run(study, HEADER + "case-0000,model-a,A,accuracy,4,\n")
    event = AuditEvent.objects.get(action="ratings.import")
    assert event.actor == study.coordinator and event.study == study.study
    assert event.after["file"] == "ratings.csv" and len(event.after["sha256"]) == 64
    assert (event.after["created"], event.after["new_names"]) == (1, ["A"])
    assert AuditEvent.objects.filter(action="membership.import").count() == 1


def test_a_locked_study_refuses_imports(study):
    services.set_study_lock(study=study.study, locked=True, actor=study.coordinator)
    with pytest.raises(AnnotationError, match="locked"):
        run(study, HEADER + "case-0000,model-a,A,accuracy,4,\n")


def test_the_export_quoting_of_formula_text_is_undone(study):
    """The site's CSV writer writes '=x as \\'=x; reading it back gives =x."""
    run(study, HEADER + "case-0000,model-a,'=A,accuracy,4,'+note\n")
    rating = ImportedRating.objects.select_related("rater").get()
    assert (rating.rater.pseudonym, rating.comment) == ("=A", "+note")


def test_decimals_cannot_be_switched_off_while_decimal_ratings_exist(study):
    RubricCriterion.objects.filter(study=study.study, key="accuracy").update(allows_decimals=True)
    run(study, HEADER + "case-0000,model-a,A,accuracy,2.5,\n")
    criteria = [
        {**c, "allows_decimals": False}
        for c in study.study.criteria.values(*services.CRITERION_FIELDS)
    ]
    with pytest.raises(AnnotationError, match="decimals stay allowed"):
        services.update_study(
            study=study.study, actor=study.coordinator, changes={}, criteria=criteria
        )


def test_allows_decimals_is_a_rubric_setting(db):
    coordinator = UserFactory()
    criteria = [
        {"key": "accuracy", "scale_min": 1, "scale_max": 5, "allows_decimals": True},
        {"key": "clarity", "scale_min": 1, "scale_max": 5},
    ]
    study = services.create_study(name="Decimals", created_by=coordinator, criteria=criteria)
    assert dict(study.criteria.values_list("key", "allows_decimals")) == {
        "accuracy": True,
        "clarity": False,
    }
