"""f flags the item with the reason typed into the prompt; f again unflags it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment
from tests.e2e.factories import RATER
from tests.support.rating_page import log_in, rate_url

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_f_flags_the_item_with_the_reason_typed_into_the_prompt(
    live_server, new_context, keyboard_study
):
    s = keyboard_study
    item = s.queue[0]
    reason = "Dose <b>10x</b> too high & unsafe"  # markup must show as text, not be rendered
    dialogs: list[tuple[str, str]] = []

    def answer(dialog) -> None:
        dialogs.append((dialog.type, dialog.message))
        if dialog.type == "prompt":
            dialog.accept(reason)
        else:
            dialog.accept()

    page = log_in(new_context(), live_server, RATER)
    page.on("dialog", answer)
    page.get_by_role("link", name="Continue rating").click()
    page.wait_for_url(rate_url(live_server, item))
    button = page.locator("#flag-button")
    expect(button).to_have_text("Flag item f")

    page.keyboard.press("f")
    expect(button).to_have_text(f"Flagged: {reason} (unflag) f")
    assert [kind for kind, _ in dialogs] == ["prompt"]
    assert "flag" in dialogs[0][1].lower()
    flagged = Assignment.objects.get(pk=item.pk)
    assert flagged.flagged is True
    assert flagged.flag_reason == reason
    assert flagged.status == Assignment.Status.PENDING, "flagging is not rating"

    # The server renders the flag after a reload; f again asks to confirm, then unflags.
    page.reload()
    expect(button).to_have_text(f"Flagged: {reason} (unflag) f")
    page.keyboard.press("f")
    expect(button).to_have_text("Flag item f")
    assert [kind for kind, _ in dialogs] == ["prompt", "confirm"]
    unflagged = Assignment.objects.get(pk=item.pk)
    assert (unflagged.flagged, unflagged.flag_reason) == (False, "")
