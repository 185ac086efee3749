"""The page follows the form live: the status pill becomes Draft once a draft is saved, a
refused submit's reasons go once fixed, a submitted revision is confirmed, and copies of
the same case are told apart without naming the model."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation import services
from annotation.models import Assignment
from tests.e2e.factories import MODEL_NAMES, RATER
from tests.support.rating_page import answered, log_in, rate_url, saved_values, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_status_pill_and_the_errors_follow_the_form(live_server, new_context, keyboard_study):
    s = keyboard_study
    item = s.queue[0]
    page = log_in(new_context(), live_server, RATER)
    page.goto(rate_url(live_server, item))
    status = page.get_by_test_id("status")
    expect(status).to_have_text("Not started")
    page.keyboard.press("4")
    wait_until(page, lambda: answered(item) == {"accuracy": 4}, "the draft is saved")
    expect(status).to_have_text("Draft")

    # Submit with two criteria open: refused, each reason beside its criterion.
    page.keyboard.press("Enter")
    completeness = page.get_by_test_id("errors-completeness")
    clarity = page.get_by_test_id("errors-clarity")
    expect(completeness).to_have_text("a value is required to submit")
    expect(clarity).to_have_text("a value is required to submit")
    expect(page.locator("fieldset[data-key=completeness]")).to_have_attribute(
        "aria-invalid", "true"
    )
    expect(status).to_have_text("Draft")
    # Focus is in the first criterion with a reason (its first point), highlighted.
    assert page.evaluate("() => document.activeElement.name") == "c-completeness"
    expect(page.locator("fieldset.criterion.active")).to_have_attribute("data-key", "completeness")

    # Giving the value takes the reason away at once, and only that criterion's.
    page.locator("input[name=c-completeness][value='3']").check()
    expect(completeness).to_be_empty()
    expect(page.locator("fieldset[data-key=completeness]")).not_to_have_attribute(
        "aria-invalid", "true"
    )
    expect(clarity).to_have_text("a value is required to submit")
    page.locator("input[name=c-clarity][value='5']").check()
    expect(clarity).to_be_empty()
    page.locator("#submit-button").click()
    page.wait_for_url(rate_url(live_server, s.queue[1]))
    expect(page.locator(".messages")).to_have_text("Item 1 is submitted.")
    assert saved_values(item) == {"accuracy": 4, "completeness": 3, "clarity": 5}


def test_a_submitted_revision_is_confirmed(live_server, new_context, keyboard_study):
    s = keyboard_study
    item = s.queue[1]
    services.submit_assignment(
        assignment_id=item.pk,
        clinician=s.rater,
        answers={
            k: services.CriterionAnswer(value=3) for k in ("accuracy", "completeness", "clarity")
        },
        time_spent_seconds=10,
    )
    page = log_in(new_context(), live_server, RATER)
    page.goto(rate_url(live_server, item))
    expect(page.get_by_test_id("status")).to_have_text("Submitted — you may revise")
    page.keyboard.press("5")
    expect(page.locator("#save-state")).to_have_text("Unsaved revision — not saved")
    expect(page.locator("#submit-button")).to_have_text(re.compile(r"^Submit revision"))
    expect(page.locator("#submit-button")).to_be_in_viewport()
    page.locator("#submit-button").click()
    page.wait_for_url(rate_url(live_server, s.queue[2]))  # the next unfinished item
    expect(page.locator(".messages")).to_have_text("Your revision of item 2 is saved.")
    assert saved_values(item) == {"accuracy": 5, "completeness": 3, "clarity": 3}
    assert Assignment.objects.get(pk=item.pk).status == Assignment.Status.SUBMITTED


def test_copies_of_a_case_are_lettered_in_the_raters_order_without_the_model(
    live_server, new_context, keyboard_study
):
    s = keyboard_study
    by_case: dict[str, list[Assignment]] = {}
    for a in s.queue:  # the rater's own order
        by_case.setdefault(a.item.external_id, []).append(a)
    pairs = [copies for copies in by_case.values() if len(copies) == 2]
    singles = [copies[0] for copies in by_case.values() if len(copies) == 1]
    assert pairs and singles, "the study must give the rater both kinds"
    page = log_in(new_context(), live_server, RATER)
    for copies in pairs:
        models = [c.item.model_name for c in copies]
        for letter, a in zip("AB", copies, strict=True):
            page.goto(rate_url(live_server, a))
            label = page.get_by_test_id("copy-label")
            expect(label).to_have_text(f"· Response {letter} of this case")
            expect(page.locator("#h-response")).to_have_text(
                f"Response to rate (Response {letter} of this case)"
            )
            body = page.content()
            assert not any(m in body for m in MODEL_NAMES)
        assert models[0] != models[1], "a pair is the same case from two models"
    for a in singles:
        page.goto(rate_url(live_server, a))
        expect(page.get_by_test_id("copy-label")).to_have_count(0)
    # Stable: a reload gives the same letter.
    page.goto(rate_url(live_server, pairs[0][1]))
    page.reload()
    expect(page.get_by_test_id("copy-label")).to_have_text("· Response B of this case")
