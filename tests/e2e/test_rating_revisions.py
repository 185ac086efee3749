"""The rating page never shows a state the server does not hold.

A change to a submitted rating is an unsaved revision until Submit revision: the page says so,
asks before leaving it (keys n and p, links, closing the tab) and, coming back, shows a copy
kept in this browser as not saved, with a way to discard or submit it. A draft the server did
not take is shown as not saved, and leaving it asks first too.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from annotation import services
from annotation.models import AuditEvent
from tests.e2e.factories import RATER, KeyboardStudy
from tests.support.rating_page import answered, checked_values, log_in, press, rate_url, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SUBMITTED = {"accuracy": 4, "completeness": 3, "clarity": 5}
AUTOSAVE_WAIT_MS = 1_200  # three times the page's autosave delay: any save would have happened

# Set RATING_SHOTS_DIR to keep a screenshot of each state (for reviewing wording and layout).
SHOTS_DIR = os.environ.get("RATING_SHOTS_DIR")


def shot(page: Page, name: str) -> None:
    if SHOTS_DIR:
        Path(SHOTS_DIR).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS_DIR) / f"{name}.png"), full_page=True)


@pytest.fixture
def submitted(keyboard_study: KeyboardStudy) -> KeyboardStudy:
    """The rater's second item (one before it, one after) is submitted with SUBMITTED."""
    s = keyboard_study
    services.submit_assignment(
        assignment_id=s.queue[1].pk,
        clinician=s.rater,
        answers={k: services.CriterionAnswer(value=v) for k, v in SUBMITTED.items()},
        time_spent_seconds=30,
    )
    return s


def record_save_states(page: Page) -> None:
    """Collect every text the save indicator ever shows, however briefly."""
    page.evaluate(
        """() => {
            window.__saveStates = [];
            const el = document.getElementById("save-state");
            new MutationObserver(() => window.__saveStates.push(el.textContent))
                .observe(el, {childList: true, characterData: true, subtree: true});
        }"""
    )


def shown_save_states(page: Page) -> list[str]:
    return page.evaluate("() => window.__saveStates")


def claims_saved(text: str) -> bool:
    """'Draft saved', 'Saved', 'Restored ... saved': anything but a plain 'not saved'."""
    return bool(re.search(r"\bsaved\b", text, re.I)) and not re.search(r"\bnot saved\b", text, re.I)


def stored_copy(page: Page, assignment) -> object:
    return page.evaluate("k => localStorage.getItem(k)", f"medhelm-draft-{assignment.handle}")


def open_item(page: Page, live_server, assignment) -> None:
    page.goto(rate_url(live_server, assignment))
    expect(page.locator("#rating-form")).to_be_visible()


def test_a_change_to_a_submitted_rating_is_shown_as_an_unsaved_revision(
    live_server, new_context, submitted
):
    s = submitted
    item = s.queue[1]
    page = log_in(new_context(), live_server, RATER)
    open_item(page, live_server, item)
    expect(page.get_by_test_id("status")).to_have_text("Submitted — you may revise")
    expect(page.get_by_test_id("unsaved")).to_be_hidden()
    shot(page, "01-submitted-clean")
    record_save_states(page)

    press(page, "2")  # accuracy 4 -> 2
    page.wait_for_timeout(AUTOSAVE_WAIT_MS)
    assert answered(item) == SUBMITTED, "the server keeps the submitted rating"
    assert checked_values(page) == {**SUBMITTED, "accuracy": 2}
    expect(page.locator("#save-state")).to_have_text("Unsaved revision — not saved")
    states = shown_save_states(page)
    assert not [t for t in states if claims_saved(t)], f"a saved state was shown: {states}"
    banner = page.get_by_test_id("unsaved")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("not saved")
    expect(banner).to_contain_text("Submit revision")
    expect(banner.get_by_role("button", name="Discard change")).to_be_visible()
    # The changed criterion shows what the server holds for it.
    expect(page.locator("fieldset[data-key=accuracy]")).to_contain_text("Submitted: 4")
    expect(page.locator("fieldset[data-key=completeness]")).not_to_contain_text("Submitted:")
    shot(page, "02-submitted-unsaved-revision")

    # Changing it back to the submitted value leaves nothing unsaved.
    press(page, "k4")
    expect(banner).to_be_hidden()
    expect(page.locator("#save-state")).not_to_have_text(re.compile("unsaved", re.I))
    assert stored_copy(page, item) is None

    # Enter submits the revision: only now does the server's rating change, with an audit row.
    press(page, "k2")
    expect(banner).to_be_visible()
    page.keyboard.press("Enter")
    page.wait_for_url(rate_url(live_server, s.queue[2]))
    assert answered(item) == {**SUBMITTED, "accuracy": 2}
    revision = AuditEvent.objects.get(action="rating.revise")
    assert (revision.before["value"], revision.after["value"]) == (4, 2)


def test_leaving_an_unsaved_revision_asks_first_in_a_keyboard_dialog(
    live_server, new_context, submitted
):
    s = submitted
    item = s.queue[1]
    url = rate_url(live_server, item)
    page = log_in(new_context(), live_server, RATER)
    open_item(page, live_server, item)
    press(page, "2")
    dialog = page.get_by_role("dialog")

    # n asks instead of leaving; Escape answers "stay".
    page.keyboard.press("n")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("not saved")
    stay = dialog.get_by_role("button", name="Stay on this item")
    expect(stay).to_be_focused()
    shot(page, "03-leave-dialog")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    assert page.url == url
    assert checked_values(page)["accuracy"] == 2

    # p asks too; Enter on the focused "Stay" button stays.
    page.keyboard.press("p")
    expect(dialog).to_be_visible()
    page.keyboard.press("Enter")
    expect(dialog).to_be_hidden()
    assert page.url == url

    # A link (the queue) asks; the keyboard reaches "Discard the change and leave".
    page.get_by_role("link", name="← Queue").click()
    expect(dialog).to_be_visible()
    discard = dialog.get_by_role("button", name="Discard the change and leave")
    for _ in range(4):
        if discard.evaluate("b => b === document.activeElement"):
            break
        page.keyboard.press("Tab")
    expect(discard).to_be_focused()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/queue/"))
    assert answered(item) == SUBMITTED
    assert stored_copy(page, item) is None, "a discarded change leaves nothing behind"

    # Back on the item: the server's values, nothing unsaved; n leaves without a question.
    open_item(page, live_server, item)
    assert checked_values(page) == SUBMITTED
    expect(page.get_by_test_id("unsaved")).to_be_hidden()

    # Closing the tab with an unsaved revision asks through the browser's own prompt.
    press(page, "2")
    expect(page.get_by_test_id("unsaved")).to_be_visible()
    prompts: list[str] = []
    page.on("dialog", lambda d: (prompts.append(d.type), d.dismiss()))
    page.close(run_before_unload=True)
    wait_until(page, lambda: prompts, "the browser asks before closing", timeout=5)
    assert prompts == ["beforeunload"]
    assert not page.is_closed(), "dismissing the prompt keeps the page"
    assert answered(item) == SUBMITTED

    # With nothing unsaved, n just goes.
    page.get_by_test_id("unsaved").get_by_role("button", name="Discard change").click()
    page.keyboard.press("n")
    page.wait_for_url(rate_url(live_server, s.queue[2]))
    assert prompts == ["beforeunload"]


def test_coming_back_shows_a_local_copy_as_not_saved_with_discard_and_submit(
    live_server, new_context, submitted
):
    s = submitted
    item = s.queue[1]
    context = new_context()
    page = log_in(context, live_server, RATER)
    open_item(page, live_server, item)
    press(page, "2")
    expect(page.locator("#save-state")).to_have_text("Unsaved revision — not saved")
    page.close()  # a closed tab: the browser keeps the change, the server never saw it

    page = context.new_page()
    page.add_init_script(
        """window.addEventListener("DOMContentLoaded", () => {
            window.__saveStates = [];
            const el = document.getElementById("save-state");
            new MutationObserver(() => window.__saveStates.push(el.textContent))
                .observe(el, {childList: true, characterData: true, subtree: true});
        });"""
    )
    open_item(page, live_server, item)
    page.wait_for_timeout(AUTOSAVE_WAIT_MS)
    save_state = page.locator("#save-state")
    expect(save_state).to_have_text("Unsaved changes from this browser — not saved")
    states = shown_save_states(page)
    assert not [t for t in states if claims_saved(t)], f"a saved state was shown: {states}"
    banner = page.get_by_test_id("unsaved")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("from this browser")
    expect(banner).to_contain_text("not saved")
    expect(page.locator("fieldset[data-key=accuracy]")).to_contain_text("Submitted: 4")
    assert checked_values(page) == {**SUBMITTED, "accuracy": 2}
    assert answered(item) == SUBMITTED
    shot(page, "04-submitted-local-copy-on-return")

    # Discard: the form shows the server's rating again and the browser's copy is gone.
    banner.get_by_role("button", name="Discard change").click()
    assert checked_values(page) == SUBMITTED
    expect(banner).to_be_hidden()
    assert stored_copy(page, item) is None
    shot(page, "05-discarded")

    # The same again, and this time Submit revision from the banner.
    press(page, "2")
    page.close()
    page = context.new_page()
    open_item(page, live_server, item)
    expect(page.get_by_test_id("unsaved")).to_be_visible()
    page.get_by_test_id("unsaved").get_by_role("button", name="Submit revision").click()
    page.wait_for_url(rate_url(live_server, s.queue[2]))
    assert answered(item) == {**SUBMITTED, "accuracy": 2}
    open_item(page, live_server, item)
    expect(page.get_by_test_id("unsaved")).to_be_hidden()
    assert stored_copy(page, item) is None


def test_a_draft_the_server_did_not_take_is_not_saved_and_leaving_it_asks_first(
    live_server, new_context, keyboard_study, monkeypatch
):
    s = keyboard_study
    item, after = s.queue[1], s.queue[2]
    # The server fails every draft (also the closing page's last one) until told otherwise.
    failing = True
    refused: list[float] = []  # when each failed draft reached the server
    real_save_draft = services.save_draft

    def save_draft(**kwargs):
        if failing:
            refused.append(time.monotonic())
            raise RuntimeError("the database is unreachable (a test's outage)")
        return real_save_draft(**kwargs)

    monkeypatch.setattr(services, "save_draft", save_draft)
    page = log_in(new_context(), live_server, RATER)
    open_item(page, live_server, item)
    record_save_states(page)
    press(page, "3")
    save_state = page.locator("#save-state")
    expect(save_state).to_have_text("Not saved: the server had an error (500); will retry")
    expect(page.get_by_test_id("unsaved")).to_be_visible()
    shot(page, "06-draft-server-error")

    page.keyboard.press("n")  # the page tries once more, fails, and asks
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("not saved")
    assert page.url == rate_url(live_server, item)
    shot(page, "07-draft-leave-dialog")
    states = shown_save_states(page)
    assert not [t for t in states if claims_saved(t)], f"a saved state was shown: {states}"
    dialog.get_by_role("button", name="Leave; keep the change in this browser").click()
    page.wait_for_url(rate_url(live_server, after))
    assert answered(item) == {}
    assert stored_copy(page, item) is not None

    # The server is back and so is the clinician: the copy is shown as not saved until the
    # server has it.
    # The page that left sent its last draft as it closed (keepalive), after the first one and
    # the one sent when n was pressed; the outage lasts until that one has failed too.
    wait_until(
        page,
        lambda: len(refused) >= 3 and time.monotonic() - refused[-1] > 1.0,
        "the closing page's last draft has been refused",
    )
    failing = False
    page.keyboard.press("p")
    page.wait_for_url(rate_url(live_server, item))
    wait_until(page, lambda: answered(item) == {"accuracy": 3}, "the kept change is sent")
    expect(save_state).to_have_text("Draft saved")
    assert stored_copy(page, item) is None


def test_a_draft_refused_because_the_item_was_submitted_elsewhere_is_shown_as_not_saved(
    live_server, new_context, keyboard_study
):
    s = keyboard_study
    item = s.queue[1]
    page = log_in(new_context(), live_server, RATER)
    open_item(page, live_server, item)
    expect(page.get_by_test_id("status")).to_have_text("Not started")
    record_save_states(page)
    # Meanwhile the same clinician submits the item from another tab.
    services.submit_assignment(
        assignment_id=item.pk,
        clinician=s.rater,
        answers={k: services.CriterionAnswer(value=v) for k, v in SUBMITTED.items()},
    )
    press(page, "1")
    # The refusal is shown, then what the server holds: the page follows it.
    expect(page.locator("#save-state")).to_have_text(
        "Not saved: this item was submitted meanwhile, from another tab or device"
    )
    expect(page.get_by_test_id("status")).to_have_text("Submitted — you may revise")
    expect(page.get_by_test_id("progress-text")).to_have_text("1 submitted")
    expect(page.locator("fieldset[data-key=accuracy]")).to_contain_text("Submitted: 4")
    expect(
        page.get_by_test_id("unsaved").get_by_role("button", name="Submit revision")
    ).to_be_visible()
    page.wait_for_timeout(AUTOSAVE_WAIT_MS)
    states = shown_save_states(page)
    assert not [t for t in states if claims_saved(t)], f"a saved state was shown: {states}"
    assert answered(item) == SUBMITTED
    shot(page, "08-draft-refused-submitted-elsewhere")
    page.keyboard.press("n")
    expect(page.get_by_role("dialog")).to_be_visible()
