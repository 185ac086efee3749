"""Keyboard focus follows the highlighted criterion, shortcuts can be switched off, the
legend lists only the keys the rubric uses, and n/p at the ends of the queue say so."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.factories import RATER
from tests.support.rating_page import answered, checked_values, log_in, press, rate_url, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def focused_criterion(page: Page) -> str | None:
    return page.evaluate(
        "() => { const fs = document.activeElement && document.activeElement.closest('fieldset.criterion'); return fs ? fs.dataset.key : null; }"
    )


def highlighted(page: Page) -> str:
    return page.locator("fieldset.criterion.active").get_attribute("data-key")


def open_first(page: Page, live_server, s) -> None:
    page.get_by_role("link", name="Continue rating").click()
    page.wait_for_url(rate_url(live_server, s.queue[0]))


def test_focus_and_highlight_move_together(live_server, new_context, keyboard_study):
    s = keyboard_study
    page = log_in(new_context(), live_server, RATER)
    open_first(page, live_server, s)
    assert highlighted(page) == "accuracy"

    # j and k take focus with the highlight.
    page.keyboard.press("j")
    assert (highlighted(page), focused_criterion(page)) == ("completeness", "completeness")
    page.keyboard.press("ArrowDown")
    assert (highlighted(page), focused_criterion(page)) == ("clarity", "clarity")
    page.keyboard.press("k")
    assert (highlighted(page), focused_criterion(page)) == ("completeness", "completeness")

    # Tab into another criterion's comment, Escape back: the digit scores the criterion that
    # has focus, and then focus and highlight move on together.
    page.locator("textarea[name='c-accuracy-comment']").focus()
    assert highlighted(page) == "accuracy"
    page.keyboard.press("Escape")
    assert (highlighted(page), focused_criterion(page)) == ("accuracy", "accuracy")
    page.keyboard.press("4")
    assert checked_values(page) == {"accuracy": 4}
    assert (highlighted(page), focused_criterion(page)) == ("completeness", "completeness")

    # Shift+Tab from there goes back into the first criterion (its comment, then its
    # points), which is then highlighted.
    page.keyboard.press("Shift+Tab")
    assert (highlighted(page), focused_criterion(page)) == ("accuracy", "accuracy")
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("() => document.activeElement.name") == "c-accuracy"
    assert highlighted(page) == "accuracy"
    # Arrows left and right change the focused (= highlighted) criterion's value only.
    page.keyboard.press("ArrowRight")
    assert checked_values(page) == {"accuracy": 5}
    page.keyboard.press("2")
    assert checked_values(page) == {"accuracy": 2}
    assert (highlighted(page), focused_criterion(page)) == ("completeness", "completeness")
    press(page, "35")
    assert checked_values(page) == {"accuracy": 2, "completeness": 3, "clarity": 5}
    assert (highlighted(page), focused_criterion(page)) == ("clarity", "clarity")
    wait_until(
        page,
        lambda: answered(s.queue[0]) == {"accuracy": 2, "completeness": 3, "clarity": 5},
        "autosave",
    )


def test_single_key_shortcuts_can_be_switched_off_and_stay_off(
    live_server, new_context, keyboard_study
):
    s = keyboard_study
    page = log_in(new_context(), live_server, RATER)
    open_first(page, live_server, s)
    legend = page.get_by_test_id("legend")
    legend.locator("summary").click()
    toggle = page.get_by_label("Single-key shortcuts on")
    expect(toggle).to_be_checked()
    toggle.uncheck()
    expect(page.locator("#shortcuts-off-note")).to_be_visible()
    expect(page.locator("#legend-keys")).to_be_hidden()
    expect(page.locator("#submit-button .key-hint")).to_be_hidden()

    page.locator("body").click(position={"x": 5, "y": 5})
    press(page, "4jnf")
    page.wait_for_timeout(600)
    assert checked_values(page) == {}
    assert page.url == rate_url(live_server, s.queue[0])
    expect(page.get_by_test_id("flag-panel")).to_be_hidden()
    assert answered(s.queue[0]) == {}

    # Remembered on the next item, and switched back on from the same place.
    page.goto(rate_url(live_server, s.queue[1]))
    page.get_by_test_id("legend").locator("summary").click()
    expect(page.get_by_label("Single-key shortcuts on")).not_to_be_checked()
    page.keyboard.press("3")
    assert checked_values(page) == {}
    page.get_by_label("Single-key shortcuts on").check()
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("3")
    assert checked_values(page) == {"accuracy": 3}


def test_the_legend_lists_only_the_keys_the_rubric_uses(live_server, new_context, keyboard_study):
    s = keyboard_study
    page = log_in(new_context(), live_server, RATER)
    open_first(page, live_server, s)
    keys = page.locator("#legend-keys")
    expect(keys.locator("dt").first).to_have_text("1\u20135")  # every criterion is 1..5
    expect(keys).not_to_contain_text("cannot assess")  # no criterion allows it
    assert page.locator("input[type=checkbox][name$='-na']").count() == 0

    # A rubric with a 0..3 criterion that allows "cannot assess": the legend follows it.
    s.study.criteria.filter(key="clarity").update(
        scale_min=0, scale_max=3, allow_cannot_assess=True
    )
    page.reload()
    expect(keys.locator("dt").first).to_have_text("0\u20135")
    expect(keys).to_contain_text("cannot assess")
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("x")
    expect(page.locator("input[name='c-clarity-na']")).to_be_checked()


def test_n_on_the_last_item_and_p_on_the_first_say_so(live_server, new_context, keyboard_study):
    s = keyboard_study
    page = log_in(new_context(), live_server, RATER)
    open_first(page, live_server, s)
    note = page.get_by_test_id("nav-note")
    page.keyboard.press("p")
    expect(note).to_have_text("This is the first item in your queue: there is no previous one.")
    expect(page.locator(".pager")).to_contain_text("First item")
    page.goto(rate_url(live_server, s.queue[-1]))
    page.keyboard.press("n")
    expect(note).to_have_text("This is the last item in your queue: there is no next one.")
    expect(page.locator(".pager")).to_contain_text("Last item")
    assert page.url == rate_url(live_server, s.queue[-1])
