"""f flags the item in the page: a reason box opens beside the button, the result stays in
view; f again removes the flag. No browser dialog is ever opened."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment
from tests.e2e.factories import RATER
from tests.support.rating_page import log_in, rate_url

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_f_flags_the_item_in_the_page_with_the_reason_in_view(
    live_server, new_context, keyboard_study
):
    s = keyboard_study
    item = s.queue[0]
    reason = "Dose <b>10x</b> too high & unsafe"  # markup must show as text, not be rendered
    dialogs: list[str] = []

    page = log_in(new_context(), live_server, RATER)
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.dismiss()))
    page.get_by_role("link", name="Continue rating").click()
    page.wait_for_url(rate_url(live_server, item))
    button = page.locator("#flag-button")
    panel = page.get_by_test_id("flag-panel")
    state = page.get_by_test_id("flag-state")
    expect(button).to_have_text("Flag item f")
    expect(panel).to_be_hidden()

    # f opens the reason box with focus in it; an empty reason is refused in the page.
    page.keyboard.press("f")
    expect(panel).to_be_visible()
    expect(button).to_have_attribute("aria-expanded", "true")
    reason_box = page.get_by_label("Why do you flag this item for the coordinator?")
    expect(reason_box).to_be_focused()
    page.get_by_role("button", name="Send flag").click()
    expect(page.get_by_test_id("flag-error")).to_have_text("Say why you flag this item.")
    assert Assignment.objects.get(pk=item.pk).flagged is False

    # Escape closes it without flagging; f again, type, Enter sends.
    reason_box.press("Escape")
    expect(panel).to_be_hidden()
    expect(button).to_be_focused()
    page.keyboard.press("f")
    reason_box.fill(reason)
    reason_box.press("Enter")
    expect(state).to_have_text(f"Flagged for the coordinator: “{reason}”")
    expect(state).to_be_in_viewport()
    expect(panel).to_be_hidden()
    expect(button).to_have_text("Remove flag f")
    flagged = Assignment.objects.get(pk=item.pk)
    assert (flagged.flagged, flagged.flag_reason) == (True, reason)
    assert flagged.status == Assignment.Status.PENDING, "flagging is not rating"
    assert page.locator("#flag-state b").count() == 0

    # The server renders the flag after a reload; f removes it, and the page says so.
    page.reload()
    expect(state).to_have_text(f"Flagged for the coordinator: “{reason}”")
    expect(button).to_have_text("Remove flag f")
    page.keyboard.press("f")
    expect(state).to_have_text("Flag removed: the coordinator no longer sees this item as flagged.")
    expect(button).to_have_text("Flag item f")
    unflagged = Assignment.objects.get(pk=item.pk)
    assert (unflagged.flagged, unflagged.flag_reason) == (False, "")
    assert dialogs == [], "no browser dialog (prompt, confirm) was opened"
