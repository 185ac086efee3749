"""A long clinical note on the rating page, on a desktop window and on a phone.

Desktop (1440x900): the texts scroll in their own pane while the progress, the rubric and
Submit stay in view; the page itself does not scroll, and moving between criteria does not
move the reader's place in the text. Phone (390x844): no horizontal overflow, the page opens
at its top, the action bar stays at the bottom of the screen, and no keyboard legend.
Screenshots go to RATING_SHOTS_DIR (default /tmp/rating-shots) for a look.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.factories import RATER, give_long_note, long_clinical_note
from tests.support.browser import log_in
from tests.support.rating_page import rate_url

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS_DIR = Path(os.environ.get("RATING_SHOTS_DIR", "/tmp/rating-shots"))
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}


def shot(page: Page, name: str) -> None:
    SHOTS_DIR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS_DIR / f"{name}.png"))


def box(page: Page, selector: str) -> dict:
    b = page.locator(selector).first.bounding_box()
    assert b is not None, f"{selector} is not rendered"
    return b


def in_viewport(page: Page, selector: str, viewport: dict) -> bool:
    b = box(page, selector)
    return (
        b["y"] >= 0
        and b["y"] + b["height"] <= viewport["height"]
        and b["x"] >= 0
        and b["x"] + b["width"] <= viewport["width"]
    )


def page_metrics(page: Page) -> dict:
    return page.evaluate(
        """() => { const d = document.scrollingElement; return {
            scrollHeight: d.scrollHeight, clientHeight: d.clientHeight, scrollTop: d.scrollTop,
            scrollWidth: d.scrollWidth, clientWidth: d.clientWidth }; }"""
    )


@pytest.fixture
def long_note_item(keyboard_study):
    note = long_clinical_note()
    assert len(note) >= 17_000
    item = keyboard_study.queue[0]
    give_long_note(item, note)
    return item


def test_desktop_the_texts_scroll_in_their_pane_and_submit_stays_in_view(
    live_server, browser, long_note_item
):
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    log_in(page, live_server, RATER, via=rate_url(live_server, long_note_item))
    expect(page.get_by_test_id("input")).to_contain_text("Hospital day 1")

    texts = page.get_by_test_id("texts")
    pane = texts.evaluate("el => ({scrollHeight: el.scrollHeight, clientHeight: el.clientHeight})")
    assert pane["scrollHeight"] > 4 * pane["clientHeight"], "the long note scrolls in its pane"
    metrics = page_metrics(page)
    assert metrics["scrollHeight"] <= metrics["clientHeight"], f"the page itself scrolls: {metrics}"
    for selector in (
        "#submit-button",
        "#flag-button",
        "[data-testid=progress]",
        "[data-testid=status]",
        "fieldset.criterion",
    ):
        assert in_viewport(page, selector, DESKTOP), f"{selector} is out of view"
    shot(page, "desktop-long-note-top")

    # Reading on: the pane scrolls to the response; the page, the rubric and Submit stay.
    page.get_by_role("link", name="Response", exact=False).first.click()
    expect(page.get_by_test_id("output")).to_be_in_viewport()
    scrolled = texts.evaluate("el => el.scrollTop")
    assert scrolled > 10_000 / 4, "the jump link scrolled the texts pane"
    assert page_metrics(page)["scrollTop"] == 0
    assert in_viewport(page, "#submit-button", DESKTOP)
    assert in_viewport(page, "fieldset.criterion", DESKTOP)
    shot(page, "desktop-long-note-response")

    # j moves between criteria without moving the reader's place in the text.
    page.get_by_test_id("output").click()
    page.keyboard.press("j")
    page.keyboard.press("j")
    expect(page.locator("fieldset.criterion.active")).to_have_attribute("data-key", "clarity")
    assert texts.evaluate("el => el.scrollTop") == scrolled
    assert page_metrics(page)["scrollTop"] == 0
    context.close()


def test_phone_no_horizontal_overflow_a_fixed_action_bar_and_no_legend(
    live_server, browser, long_note_item
):
    context = browser.new_context(
        viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2
    )
    page = context.new_page()
    log_in(page, live_server, RATER, via=rate_url(live_server, long_note_item))
    expect(page.get_by_test_id("input")).to_contain_text("Hospital day 1")
    page.wait_for_timeout(300)  # anything the page would do on load has been done

    metrics = page_metrics(page)
    assert metrics["scrollWidth"] <= metrics["clientWidth"], f"horizontal overflow: {metrics}"
    assert metrics["scrollTop"] == 0, "the page scrolled on load"
    assert box(page, ".topbar")["y"] == 0
    assert metrics["scrollHeight"] > 3 * metrics["clientHeight"], "the long note is in the page"
    expect(page.get_by_test_id("legend")).to_be_hidden()
    expect(page.locator(".key-hint").first).to_be_hidden()
    bar = page.get_by_test_id("action-bar")
    bar_box = bar.bounding_box()
    assert abs(bar_box["y"] + bar_box["height"] - PHONE["height"]) <= 1, "the bar is at the bottom"
    assert in_viewport(page, "#submit-button", PHONE)
    shot(page, "phone-long-note-top")

    for where in (0.5, 1.0):  # halfway through the note, then the end of the page
        page.evaluate(
            "f => window.scrollTo(0, f * (document.scrollingElement.scrollHeight - innerHeight))",
            where,
        )
        page.wait_for_timeout(100)
        bar_box = bar.bounding_box()
        assert abs(bar_box["y"] + bar_box["height"] - PHONE["height"]) <= 1, (
            f"the bar moved at {where}"
        )
        assert in_viewport(page, "#submit-button", PHONE)
        assert page_metrics(page)["scrollWidth"] <= PHONE["width"]
    # At the end of the page the last criterion is not hidden behind the bar.
    last = box(page, "fieldset.criterion:last-of-type")
    assert last["y"] + last["height"] <= bar.bounding_box()["y"]
    # A tap scores; the save state shows in the bar, also when scrolled back to the note.
    page.locator("input[name=c-clarity][value='4']").tap()
    expect(page.get_by_test_id("bar-state")).to_have_text("Draft saved")
    shot(page, "phone-rubric-end")
    page.evaluate("() => window.scrollTo(0, 0)")
    expect(page.get_by_test_id("bar-state")).to_be_in_viewport()
    context.close()
