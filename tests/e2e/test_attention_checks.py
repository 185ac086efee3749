"""A coordinator plants an attention check in the browser (the item found with the search and
chosen from the list, and its passing answers, on the checks page); after its two raters submit, one with an obvious wrong answer, the dashboard
reports that rater as failing and the other as passing, with the answers given."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation import services
from annotation.models import Assignment, AttentionCheck
from tests.factories import FULL_ANSWERS, make_study_with_members
from tests.support.axe import assert_accessible
from tests.support.browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = "/tmp/i19-checks-{}.png"


def test_the_coordinator_plants_a_check_and_the_dashboard_reports_the_failing_rater(
    live_server, page
):
    built = make_study_with_members(n_items=8, n_clinicians=3, k=2, name="Checks study")
    study = built.study
    item = study.items.order_by("pk")[3]

    log_in(page, live_server, built.coordinator.username)
    page.goto(f"{live_server.url}/studies/{study.pk}/")
    page.get_by_role("link", name="Attention checks").click()
    page.get_by_label("Find items by case, model, benchmark or taxonomy name").fill(
        item.external_id
    )
    page.get_by_role("button", name="Find").click()
    expect(page.get_by_test_id("check-choices-count")).to_contain_text(
        f"matching “{item.external_id}” listed"
    )
    form = page.get_by_test_id("check-form")
    form.get_by_label("Item:", exact=True).select_option(
        label=f"{item.external_id} · {item.model_name} (#{item.pk})"
    )
    form.get_by_label("Accuracy: lowest passing answer").fill("4")
    form.get_by_label("Note for coordinators").fill("The output repeats the reference.")
    form.get_by_role("button", name="Save the check").click()
    expect(page.get_by_test_id("check-count")).to_have_text("1")
    expect(page.get_by_test_id("checks")).to_contain_text("accuracy 4\N{EN DASH}5")
    assert AttentionCheck.objects.get(item=item).expected == {"accuracy": [4, 5]}
    expect(
        form.get_by_label("Item:", exact=True).locator(
            "option", has_text=f"(#{item.pk}, attention check)"
        )
    ).to_have_count(1)
    page.screenshot(path=SHOTS.format("marked"), full_page=True)
    assert_accessible(page, "the attention-checks page with its item list")

    good, bad = Assignment.objects.filter(item=item).select_related("clinician").order_by("pk")
    for assignment, accuracy in ((good, 5), (bad, 1)):
        answers = {**FULL_ANSWERS, "accuracy": services.CriterionAnswer(value=accuracy)}
        services.submit_assignment(
            assignment_id=assignment.pk, clinician=assignment.clinician, answers=answers
        )
    pseudonym = {m.user_id: m.pseudonym for m in study.memberships.all()}

    page.goto(f"{live_server.url}/studies/{study.pk}/")
    results = page.get_by_test_id("check-results-table")
    failing = results.get_by_test_id(f"check-rater-{pseudonym[bad.clinician_id]}")
    expect(failing).to_contain_text("failed 1")
    expect(failing).to_contain_text("failed · accuracy 1")
    passing = results.get_by_test_id(f"check-rater-{pseudonym[good.clinician_id]}")
    expect(passing).to_contain_text("passed · accuracy 5")
    expect(passing).not_to_contain_text("failed 1")
    page.get_by_test_id("check-results").scroll_into_view_if_needed()
    page.screenshot(path=SHOTS.format("dashboard"), full_page=True)
    assert_accessible(page, "the dashboard with attention-check results")
