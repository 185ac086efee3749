"""The rating flow for a keyboard and a screen-reader user.

axe-core (tests/support/axe.py) finds no serious or critical violation on the clinician's
home, queue and rating pages (with the reason box open and after a refused submit too);
every control is reached by Tab and has an accessible name; and an item can be rated and
submitted with Tab, the arrows and Enter alone, single-key shortcuts switched off.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.factories import RATER
from tests.support.axe import assert_accessible
from tests.support.rating_page import checked_values, log_in, rate_url, saved_values

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FOCUSABLE = """() => Array.from(document.querySelectorAll(
    'a[href], button, input:not([type=hidden]), textarea, select, summary, [tabindex]:not([tabindex="-1"])'))
  .filter(el => !el.disabled && el.getClientRects().length && getComputedStyle(el).visibility !== 'hidden')
  .map(el => el.type === 'radio' ? 'radio:' + el.name : (el.id || el.name || el.getAttribute('href') || el.outerHTML.slice(0, 60)))"""

# The focused element's label, and whether Tab reached it before (two links may share a label:
# the site name and "Home" both go to "/", so the walk ends on the element, not the label).
ACTIVE = """() => { const el = document.activeElement;
  if (!el || el === document.body) return null;
  const label = el.type === 'radio' ? 'radio:' + el.name : (el.id || el.name || el.getAttribute('href') || el.outerHTML.slice(0, 60));
  const seen = el.hasAttribute('data-tab-seen');
  el.setAttribute('data-tab-seen', '');
  return [label, seen]; }"""


def test_axe_finds_no_serious_violation_on_the_clinicians_pages(
    live_server, new_context, keyboard_study
):
    s = keyboard_study
    page = log_in(new_context(), live_server, RATER)
    assert_accessible(page, "the clinician's home page")
    page.get_by_role("link", name="Open queue").click()
    expect(page.locator("main")).to_be_visible()
    assert_accessible(page, "the clinician's queue")
    page.goto(rate_url(live_server, s.queue[0]))
    assert_accessible(page, "the rating page")
    page.keyboard.press("f")
    expect(page.get_by_test_id("flag-panel")).to_be_visible()
    page.get_by_test_id("legend").locator("summary").click()
    assert_accessible(page, "the rating page, reason box and legend open")
    page.get_by_role("button", name="Cancel").click()
    page.locator("body").click(position={"x": 2, "y": 2})
    page.keyboard.press("Enter")  # nothing rated: refused, with a reason beside each criterion
    expect(page.get_by_test_id("errors-accuracy")).not_to_be_empty()
    assert_accessible(page, "the rating page after a refused submit")
    page.set_viewport_size({"width": 390, "height": 844})
    assert_accessible(page, "the rating page on a phone-sized window")


def test_every_control_is_reached_by_tab_and_has_a_name(live_server, new_context, keyboard_study):
    s = keyboard_study
    page = log_in(new_context(), live_server, RATER)
    page.goto(rate_url(live_server, s.queue[0]))
    page.get_by_test_id("legend").locator("summary").click()
    expected = set(page.evaluate(FOCUSABLE))
    # the walk starts at the page's first stop, the skip link, and goes on to the last
    page.locator("a.skip-link").focus()
    reached: list[str] = [page.evaluate(ACTIVE)[0]]
    for _ in range(len(expected) + 10):
        page.keyboard.press("Tab")
        current = page.evaluate(ACTIVE)
        if current is None or current[1]:  # left the page, or back at an element seen
            break
        reached.append(current[0])
        focused = page.locator("*:focus")
        expect(focused).to_have_accessible_name(re.compile(r"\w"))
    assert expected <= set(reached), f"not reached by Tab: {sorted(expected - set(reached))}"
    # The radio groups are named by their criterion, each point by its number.
    expect(page.get_by_role("group", name="1. Accuracy")).to_be_visible()
    expect(page.get_by_role("radio", name=re.compile(r"^4"))).to_have_count(3)
    expect(page.get_by_role("textbox", name=re.compile("^Comment on accuracy"))).to_be_visible()
    expect(page.get_by_role("region", name="Case texts")).to_be_visible()


def test_an_item_is_rated_and_submitted_with_tab_arrows_and_enter_only(
    live_server, new_context, keyboard_study
):
    s = keyboard_study
    item = s.queue[0]
    page = log_in(new_context(), live_server, RATER)
    page.goto(rate_url(live_server, item))
    page.evaluate("() => localStorage.setItem('medhelm-shortcuts-off', '1')")
    page.reload()

    def tab_to(predicate_js: str, limit: int = 60) -> None:
        for _ in range(limit):
            page.keyboard.press("Tab")
            if page.evaluate(predicate_js):
                return
        raise AssertionError(f"Tab never reached {predicate_js}")

    for key, steps in (("accuracy", 3), ("completeness", 1), ("clarity", 4)):
        tab_to(f"() => document.activeElement.name === 'c-{key}'")
        page.keyboard.press("Space")  # checks the first point
        for _ in range(steps):
            page.keyboard.press("ArrowRight")
    assert checked_values(page) == {"accuracy": 4, "completeness": 2, "clarity": 5}
    tab_to("() => document.activeElement.id === 'submit-button'")
    page.keyboard.press("Enter")
    page.wait_for_url(rate_url(live_server, s.queue[1]))
    assert saved_values(item) == {"accuracy": 4, "completeness": 2, "clarity": 5}
