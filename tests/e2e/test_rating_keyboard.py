"""The issue's scenario in a real browser, driven by the keyboard only.

A clinician logs in, rates three items with the keyboard only, closes the tab halfway through
the fourth, logs in again and finds the draft; the model's name appears nowhere in what the
browser received. The other behaviours of the rating page have one module each
(tests/e2e/test_rating_*.py).
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from annotation.models import Assignment, Item
from tests.e2e.factories import MODEL_NAMES, OTHER_RATERS, RATER, KeyboardStudy
from tests.support.rating_page import (
    KEYS,
    ResponseLog,
    answered,
    checked_values,
    log_in,
    press,
    radio,
    rate_url,
    saved_values,
    status_of,
    wait_until,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_keyboard_rating_survives_a_closed_tab_and_never_reveals_the_model(
    live_server, new_context, keyboard_study
):
    s = keyboard_study
    log = ResponseLog()

    # First session: three items rated with digit keys and Enter only, the fourth half done.
    first = new_context()
    log.attach(first)
    page = log_in(first, live_server, RATER)
    page.get_by_role("link", name="Continue rating").click()
    rate_three_items(page, live_server, s, log, scores=[(4, 3, 5), (2, 5, 1), (5, 4, 4)])
    fourth = s.queue[3]
    leave_half_done(page, fourth)
    log.close(first)  # the tab goes away mid-item, without submitting

    # Second session, a fresh browser context: the queue's "Continue rating" opens the draft.
    second = new_context()
    log.attach(second)
    page = log_in(second, live_server, RATER)
    page.get_by_role("link", name="Open queue").click()
    page.get_by_test_id("continue").click()
    page.wait_for_url(rate_url(live_server, fourth))
    finish_the_draft(page, live_server, s, log, fourth)
    log.close(second)

    assert_blinded(log, s)


def rate_three_items(
    page: Page, live_server, s: KeyboardStudy, log: ResponseLog, scores: list[tuple[int, ...]]
) -> None:
    """Each digit scores one criterion and moves on; Enter submits and opens the next item."""
    for i, values in enumerate(scores):
        assignment = s.queue[i]
        expected = dict(zip(KEYS, values, strict=True))
        page.wait_for_url(rate_url(live_server, assignment))
        expect(page.locator(".rate-head")).to_contain_text(f"Item {i + 1} of {len(s.queue)}")
        expect(page.get_by_test_id("status")).to_have_text("Not started")
        press(page, "".join(map(str, values)))
        assert checked_values(page) == expected
        wait_until(
            page, lambda a=assignment, e=expected: answered(a) == e, "the answers are autosaved"
        )
        expect(page.locator("#save-state")).to_have_text("Draft saved")
        log.settle(page)
        page.keyboard.press("Enter")
        page.wait_for_url(rate_url(live_server, s.queue[i + 1]))
        assert status_of(assignment) == Assignment.Status.SUBMITTED
        assert saved_values(assignment) == expected
    submitted = Assignment.objects.filter(
        study=s.study, clinician=s.rater, status=Assignment.Status.SUBMITTED
    )
    assert sorted(submitted.values_list("pk", flat=True)) == sorted(
        a.pk for a in s.queue[: len(scores)]
    )


def leave_half_done(page: Page, fourth: Assignment) -> None:
    """Two of three criteria of the fourth item, autosaved as a draft."""
    expect(page.get_by_test_id("status")).to_have_text("Not started")
    press(page, "24")
    wait_until(
        page,
        lambda: answered(fourth) == {"accuracy": 2, "completeness": 4},
        "the draft of the fourth item reaches the server",
    )
    expect(page.locator("#save-state")).to_have_text("Draft saved")
    assert status_of(fourth) == Assignment.Status.IN_PROGRESS


def finish_the_draft(
    page: Page, live_server, s: KeyboardStudy, log: ResponseLog, fourth: Assignment
) -> None:
    """The draft is shown again; the keyboard picks up at the first criterion still open, so
    one digit and Enter finish it."""
    expect(page.get_by_test_id("status")).to_have_text("Draft")
    expect(radio(page, "accuracy", 2)).to_be_checked()
    expect(radio(page, "completeness", 4)).to_be_checked()
    assert checked_values(page) == {"accuracy": 2, "completeness": 4}
    press(page, "3")
    wait_until(
        page,
        lambda: answered(fourth) == {"accuracy": 2, "completeness": 4, "clarity": 3},
        "autosave",
    )
    log.settle(page)
    page.keyboard.press("Enter")
    page.wait_for_url(rate_url(live_server, s.queue[4]))
    assert status_of(fourth) == Assignment.Status.SUBMITTED
    assert saved_values(fourth) == {"accuracy": 2, "completeness": 4, "clarity": 3}


def assert_blinded(log: ResponseLog, s: KeyboardStudy) -> None:
    """Nothing the browser received names a model or another clinician."""
    assert not log.unreadable, f"response bodies the check could not read: {log.unreadable}"
    urls = log.urls()
    assert any("/draft/" in u for u in urls), "the check must include the autosave answers"
    assert any(u.endswith("/rate.js") for u in urls)
    assert log.containing(RATER), "the rater's own name is in the page header: bodies were read"
    assert log.containing("Response 1 to case"), "the model outputs were received"
    model_names = set(Item.objects.filter(study=s.study).values_list("model_name", flat=True))
    assert model_names == set(MODEL_NAMES)
    for secret in [*model_names, *OTHER_RATERS]:
        assert not log.containing(secret), f"{secret!r} was sent to the rater's browser"
