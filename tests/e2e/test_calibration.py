"""A new rater in a study with calibration items is sent to them first (their ordinary item
stays closed), rates them with the keyboard, sees their ratings beside the reference, and
then their queue opens on an ordinary item."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotation import services
from annotation.models import Assignment, CalibrationCompletion, Item
from tests.factories import make_study_with_members
from tests.support.axe import assert_accessible
from tests.support.rating_page import answered, log_in, press, rate_url, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = "/tmp/i19-calibration-{}.png"


def test_a_new_rater_calibrates_first_sees_the_comparison_then_gets_the_queue(
    live_server, new_context
):
    built = make_study_with_members(n_items=6, n_clinicians=2, k=2, name="Calibration study")
    study = built.study
    first, second = study.items.order_by("pk")[:2]
    for item, reference in ((first, {"accuracy": 4, "completeness": 3}), (second, {"accuracy": 2})):
        services.mark_calibration_item(
            study=study, item_id=item.pk, reference=reference, note="", actor=built.coordinator
        )
    # the factory's outputs name their model: a name of its own shows any leak
    Item.objects.filter(pk__in=[first.pk, second.pk]).update(model_name="hidden-model-x")
    rater = built.clinicians[0]
    calibration = list(
        Assignment.objects.filter(clinician=rater, item__calibration_item__isnull=False).order_by(
            "position"
        )
    )
    ordinary = (
        Assignment.objects.filter(clinician=rater, item__calibration_item__isnull=True)
        .exclude(status="withdrawn")
        .order_by("position")
        .first()
    )

    page = log_in(new_context(), live_server, rater.username)
    page.goto(live_server.url + reverse("annotation:queue", args=[study.pk]))
    expect(page.get_by_test_id("calibration-first")).to_contain_text("0 of 2 rated")
    # an ordinary item is closed until calibration is done: back to the calibration item
    page.goto(rate_url(live_server, ordinary))
    page.wait_for_url(rate_url(live_server, calibration[0]))
    expect(page.get_by_test_id("calibration-notice")).to_be_visible()
    assert "hidden-model-x" not in page.content()

    for assignment, keys in ((calibration[0], "534"), (calibration[1], "125")):
        page.wait_for_url(rate_url(live_server, assignment))
        press(page, keys)
        expected = dict(zip(("accuracy", "completeness", "clarity"), map(int, keys), strict=True))
        wait_until(page, lambda a=assignment, e=expected: answered(a) == e, "draft saved")
        page.keyboard.press("Enter")

    page.wait_for_url(live_server.url + reverse("annotation:my-calibration", args=[study.pk]))
    items = page.get_by_test_id("calibration-item")
    expect(items).to_have_count(2)
    # item 1: accuracy 5 against 4 (+1), completeness 3 against 3 (0); item 2: accuracy 1 vs 2
    for n, key, cells in (
        (0, "accuracy", ["Accuracy", "5", "4", "+1"]),
        (0, "completeness", ["Completeness", "3", "3", "0"]),
        (1, "accuracy", ["Accuracy", "1", "2", "-1"]),
    ):
        expect(items.nth(n).get_by_test_id(f"calibration-{key}").locator("td")).to_have_text(cells)
    expect(page.get_by_test_id("calibration-summary")).to_contain_text(
        "you gave the reference value 33% of the time"
    )
    page.screenshot(path=SHOTS.format("comparison"), full_page=True)
    assert_accessible(page, "the rater's calibration comparison")
    completion = CalibrationCompletion.objects.get(study=study, clinician=rater)
    assert completion.summary["n"] == 3 and completion.summary["mean_abs_diff"] == pytest.approx(
        2 / 3
    )

    page.get_by_test_id("open-queue").click()
    page.wait_for_url(rate_url(live_server, ordinary))
    expect(page.get_by_test_id("calibration-notice")).to_have_count(0)
    page.screenshot(path=SHOTS.format("queue-open"), full_page=True)
