"""Raters are named one way everywhere (annotation.selectors.raters): a clinician by their
study pseudonym, a clinician without one by the same fallback label on every page, export,
report table and the agreement watch; and the watch counts the score table's clinician
ratings, imported ones included."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest

from agreement.selectors import score_data
from agreement.services import watch as watch_service
from annotation import selectors, services
from annotation.models import AgreementWatch, Assignment, Item, StudyMembership
from annotation.selectors.raters import unnamed_rater
from tests.factories import FULL_ANSWERS, StudyWithMembers, make_study_with_members

pytestmark = pytest.mark.django_db

REFERENCE = {"accuracy": 4, "completeness": 3, "clarity": None}


@pytest.fixture
def unnamed() -> tuple[StudyWithMembers, object]:
    """A study whose first clinician has no pseudonym (a membership from before them), has
    submitted and flagged their work, and was dealt an attention check and a calibration
    item."""
    built = make_study_with_members(n_items=6, n_clinicians=3, k=2)
    study, coordinator, rater = built.study, built.coordinator, built.clinicians[0]
    mine = list(Assignment.objects.filter(study=study, clinician=rater).order_by("pk"))
    services.mark_attention_check(
        study=study,
        item_id=mine[0].item_id,
        expected={"accuracy": (1, 2)},
        note="planted",
        actor=coordinator,
    )
    spare = Item.objects.filter(study=study).exclude(assignments__clinician=rater).first()
    services.mark_calibration_item(
        study=study, item_id=spare.pk, reference=REFERENCE, note="", actor=coordinator
    )
    for assignment in Assignment.objects.filter(study=study, clinician=rater).exclude(
        status=Assignment.Status.WITHDRAWN
    ):
        services.submit_assignment(
            assignment_id=assignment.pk, clinician=rater, answers=FULL_ANSWERS
        )
    services.flag_assignment(
        assignment_id=mine[1].pk, clinician=rater, flagged=True, reason="unclear"
    )
    StudyMembership.objects.filter(study=study, user=rater).update(pseudonym="")
    return built, rater


def _labels_in(rows, key: str = "rater") -> set[str]:
    return {row[key] if isinstance(row, dict) else getattr(row, key) for row in rows}


def _item_review(built: StudyWithMembers, rater) -> set[str]:
    item = Assignment.objects.filter(study=built.study, clinician=rater, flagged=True).get().item
    review = selectors.item_review(study=built.study, item=item)
    return _labels_in(review.assignments) | _labels_in(review.history)


PLACES: dict[str, Callable[[StudyWithMembers, object], set[str]]] = {
    "ratings export": lambda b, _r: _labels_in(selectors.rating_export_rows(study=b.study)),
    "ratings long export": lambda b, _r: _labels_in(selectors.ratings_long_rows(study=b.study)),
    "calibration results": lambda b, _r: _labels_in(selectors.calibration_results(study=b.study)),
    "attention check results": lambda b, _r: _labels_in(selectors.check_results(study=b.study)),
    "flagged items": lambda b, _r: _labels_in(selectors.flagged_items(study=b.study)),
    "item review": _item_review,
    "score table": lambda b, _r: set(
        score_data(study=b.study).table.query("rater_kind == 'clinician'")["rater"]
    ),
    "agreement watch": lambda b, _r: set(watch_service.watch_ratings(study_id=b.study.pk)["rater"]),
}


@pytest.mark.parametrize("place", list(PLACES))
def test_a_clinician_without_a_pseudonym_has_the_one_fallback_label(unnamed, place):
    built, rater = unnamed
    shown = PLACES[place](built, rater)

    assert unnamed_rater(rater.pk) in shown, shown
    assert rater.get_username() not in shown and "?" not in shown and "" not in shown


def test_the_ratings_export_page_shows_the_fallback_label(unnamed, client):
    built, rater = unnamed
    client.force_login(built.coordinator)

    response = client.get(f"/studies/{built.study.pk}/export/ratings-long.csv")

    body = b"".join(response.streaming_content).decode()
    assert response.status_code == 200
    assert f",{unnamed_rater(rater.pk)}," in body


RATINGS = "external_id,model,rater,criterion,value,comment\n" + "".join(
    f"case-{i:04d},model-a,{rater},{key},{value},\n"
    for i in range(6)
    for rater, shift in (("ext-1", 0), ("ext-2", 1))
    for key, value in (("accuracy", 2 + (i % 3) + shift), ("clarity", 1 + (i % 4) + shift))
    if value <= 5
)


def test_the_watch_counts_the_score_tables_clinicians_imported_ratings_included():
    built = make_study_with_members(n_items=6, n_clinicians=3, k=2)
    clinician = built.clinicians[0]
    for assignment in Assignment.objects.filter(study=built.study, clinician=clinician):
        services.submit_assignment(
            assignment_id=assignment.pk, clinician=clinician, answers=FULL_ANSWERS
        )
    services.import_ratings(
        study=built.study, data=RATINGS.encode(), name="r.csv", actor=built.coordinator
    )
    table = score_data(study=built.study).table
    expected = Counter(table.loc[table["rater_kind"] == "clinician", "rater"])
    assert {"ext-1", "ext-2"} <= set(expected)

    watched = watch_service.watch_ratings(study_id=built.study.pk)
    watch_service.refresh_watch(study_id=built.study.pk)

    assert Counter(watched["rater"]) == expected
    summary = AgreementWatch.objects.get(study=built.study).summary
    assert sorted(r["rater"] for r in summary["raters"]) == sorted(expected)
    assert summary["n_ratings"] == sum(expected.values())
