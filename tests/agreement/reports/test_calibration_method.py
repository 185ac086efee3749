"""A report leaves calibration items out of every statistic, says how many, and gives each
rater's agreement with the reference in the method section and the methods paragraph."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agreement import services
from annotation import services as annotation_services
from annotation.models import Assignment
from tests.agreement.factories import build_study
from tests.factories import FULL_ANSWERS, item_rows

PARAMS = {"n_resamples": 30, "seed": 3}


@pytest.fixture
def calibrated(db):
    """A new item of the study marked with a reference (accuracy 4, completeness 2), rated
    by one rater with FULL_ANSWERS (accuracy 4, completeness 3): exact 1 of 2, mean
    absolute difference 0.5."""
    built = build_study(n_items=8, n_clinicians=3)
    study, coordinator = built.study, built.members.coordinator
    annotation_services.create_items(
        study=study, rows=item_rows(1, prefix="calib"), actor=coordinator
    )
    item = study.items.get(external_id="calib-0000")
    annotation_services.mark_calibration_item(
        study=study,
        item_id=item.pk,
        reference={"accuracy": 4, "completeness": 2},
        note="",
        actor=coordinator,
    )
    rater = built.members.clinicians[0]
    mine = Assignment.objects.get(item=item, clinician=rater)
    annotation_services.submit_assignment(
        assignment_id=mine.pk, clinician=rater, answers=FULL_ANSWERS
    )
    annotation_services.advance_calibration(study=study, clinician=rater)
    pseudonym = study.memberships.get(user=rater, role="clinician").pseudonym
    return built, item, pseudonym


def test_the_report_excludes_calibration_items_and_reports_each_rater(calibrated, client):
    built, _item, pseudonym = calibrated
    snapshot = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    record = snapshot.method["calibration"]
    assert record["n_items"] == 1
    assert snapshot.method["n_items"]["study"] == 8  # the calibration item is not counted
    assert snapshot.results["coverage"]["calibration_items_excluded"] == 1
    rows = {r["rater"]: r for r in record["raters"]}
    assert rows[pseudonym]["n"] == 2 and rows[pseudonym]["exact"] == pytest.approx(0.5)
    assert rows[pseudonym]["mean_abs_diff"] == pytest.approx(0.5)
    assert all(r["submitted"] == 0 for name, r in rows.items() if name != pseudonym)
    text = services.methods_text(snapshot)
    assert "1 calibration item with a reference rating" in text
    assert f"{pseudonym} 50% exact, mean absolute difference 0.50" in text
    client.force_login(built.members.researcher)
    page = client.get(reverse("agreement:report", args=[built.study.pk, snapshot.pk]))
    html = page.content.decode()
    assert 'data-testid="calibration-method-table"' in html and pseudonym in html


def test_a_report_from_before_calibration_says_nothing_was_recorded(calibrated, client):
    built, *_ = calibrated
    snapshot = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    del snapshot.method["calibration"]
    snapshot.save()
    assert "calibration item" not in services.methods_text(snapshot)
    client.force_login(built.members.researcher)
    page = client.get(reverse("agreement:report", args=[built.study.pk, snapshot.pk]))
    assert "report computed before calibration items existed" in page.content.decode()
