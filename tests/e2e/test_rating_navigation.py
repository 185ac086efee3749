"""n and p walk the clinician's own order; a digit typed just before n is still saved."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.factories import RATER
from tests.support.rating_page import answered, log_in, press, rate_url, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_n_and_p_walk_the_clinicians_own_order_and_keep_a_started_draft(
    live_server, new_context, keyboard_study
):
    s = keyboard_study
    q = s.queue
    item_order = [a.item_id for a in q]
    assert item_order != sorted(item_order), "the rater's own order must differ from item order"
    page = log_in(new_context(), live_server, RATER)
    page.get_by_role("link", name="Continue rating").click()
    page.wait_for_url(rate_url(live_server, q[0]))
    visited: list[str] = []
    page.on(
        "framenavigated",
        lambda frame: visited.append(frame.url) if frame == page.main_frame else None,
    )

    page.keyboard.press("p")  # nothing before the first item: stays put
    page.keyboard.press("n")
    page.wait_for_url(rate_url(live_server, q[1]))
    expect(page.locator(".rate-head")).to_contain_text(f"Item 2 of {len(q)}")
    page.keyboard.press("n")
    page.wait_for_url(rate_url(live_server, q[2]))
    expect(page.locator(".rate-head")).to_contain_text(f"Item 3 of {len(q)}")
    page.keyboard.press("p")
    page.wait_for_url(rate_url(live_server, q[1]))
    # A digit then n at once: the draft is sent before the page leaves.
    press(page, "5n")
    page.wait_for_url(rate_url(live_server, q[2]))
    wait_until(
        page, lambda: answered(q[1]) == {"accuracy": 5}, "the draft left behind by n is saved"
    )
    assert visited == [rate_url(live_server, a) for a in (q[1], q[2], q[1], q[2])]
    # The last item has no next: n stays put, p goes back.
    page.goto(rate_url(live_server, q[-1]))
    page.keyboard.press("n")
    page.keyboard.press("p")
    page.wait_for_url(rate_url(live_server, q[-2]))
    assert visited[-2:] == [rate_url(live_server, q[-1]), rate_url(live_server, q[-2])]
