"""The raw ratings export (CSV, JSON, API) marks attention-check items and gives, per row,
the range of its criterion that passes, so a researcher can leave the checks out or score
them; only study readers get it, never a rater."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation import services
from annotation.models import Assignment
from annotation.selectors import EXPORT_COLUMNS
from tests.factories import FULL_ANSWERS

pytestmark = pytest.mark.django_db

EXPECTED = {"accuracy": (4, 5)}


@pytest.fixture
def rated(setup):
    """Item 0 is a check on accuracy (4-5 passes); its two raters and one rater of another
    item have submitted."""
    check, other = setup.study.items.order_by("pk")[:2]
    services.mark_attention_check(
        study=setup.study, item_id=check.pk, expected=EXPECTED, note="", actor=setup.coordinator
    )
    for a in [
        *Assignment.objects.filter(item=check).select_related("clinician"),
        Assignment.objects.filter(item=other).select_related("clinician").first(),
    ]:
        services.submit_assignment(assignment_id=a.pk, clinician=a.clinician, answers=FULL_ANSWERS)
    return setup, check


def _csv_rows(client, study_id: int) -> list[dict[str, str]]:
    response = client.get(reverse("annotation:export", args=[study_id, "csv"]))
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_the_csv_marks_check_items_with_the_range_of_each_criterion(client, rated):
    setup, check = rated
    client.force_login(setup.researcher)
    rows = _csv_rows(client, setup.study.pk)
    assert list(rows[0]) == EXPORT_COLUMNS
    on_check = [r for r in rows if r["item_id"] == str(check.pk)]
    others = [r for r in rows if r["item_id"] != str(check.pk)]
    assert len(on_check) == 2 * len(FULL_ANSWERS) and len(others) == len(FULL_ANSWERS)
    assert {r["attention_check"] for r in on_check} == {"True"}
    assert {r["attention_check"] for r in others} == {"False"}
    expected = {(r["criterion"], r["expected_low"], r["expected_high"]) for r in on_check}
    # the check names accuracy only: the other criteria of the item have no range
    assert expected == {
        (key, *(map(str, EXPECTED[key]) if key in EXPECTED else ("", ""))) for key in FULL_ANSWERS
    }
    assert {(r["expected_low"], r["expected_high"]) for r in others} == {("", "")}


def test_the_json_export_and_the_api_mark_them_the_same_way(client, rated):
    setup, check = rated
    client.force_login(setup.coordinator)
    page = client.get(reverse("annotation:export", args=[setup.study.pk, "json"])).json()
    api = APIClient()
    api.force_authenticate(setup.researcher)
    served = api.get(f"/api/studies/{setup.study.pk}/ratings/").json()
    for body in (page, served):
        assert body["columns"] == EXPORT_COLUMNS
        marked = {
            (r["item_id"], r["criterion"]): (r["attention_check"], r["expected_low"])
            for r in body["rows"]
        }
        assert marked[(check.pk, "accuracy")] == (True, EXPECTED["accuracy"][0])
        assert marked[(check.pk, "clarity")] == (True, None)
        assert {v for (item, _), v in marked.items() if item != check.pk} == {(False, None)}


def test_a_rater_gets_none_of_the_exports(client, rated):
    setup, check = rated
    rater = Assignment.objects.filter(item=check).first().clinician
    client.force_login(rater)
    for fmt in ("csv", "json"):
        response = client.get(reverse("annotation:export", args=[setup.study.pk, fmt]))
        assert response.status_code == 403, fmt
    api = APIClient()
    api.force_authenticate(rater)
    assert api.get(f"/api/studies/{setup.study.pk}/ratings/").status_code == 403
