"""A change made while the connection is down survives reopening the page, then reaches
the server."""

from __future__ import annotations

import contextlib
import os
import re
import signal

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment
from tests.e2e.factories import RATER
from tests.support.rating_page import (
    answered,
    log_in,
    press,
    radio,
    rate_url,
    status_of,
    wait_until,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def own_browser(browser):
    """A Chromium of this test's own: crashing the renderers kills every renderer process of
    the browser, and in the session's shared browser that took down processes other pages
    (or Chromium's spare renderer) stood on, after which opening a page hung (seen in CI)."""
    from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS
    from tests.support.rating_page import TIMEOUT_MS

    chromium = browser.browser_type.launch(
        executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
    )
    context = chromium.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    yield context
    chromium.close()


def crash_renderers(page) -> None:
    """Kill the browser's renderer processes, as a crash would: no pagehide, no unload.
    (CDP's Page.crash never answers, and chrome://crash is refused.)"""
    browser = page.context.browser
    processes = browser.new_browser_cdp_session().send("SystemInfo.getProcessInfo")
    with page.expect_event("crash"):
        for process in processes["processInfo"]:
            if process["type"] == "renderer":
                with contextlib.suppress(ProcessLookupError):  # gone already
                    os.kill(process["id"], signal.SIGKILL)


def test_change_made_offline_survives_reopening_and_then_reaches_the_server(
    live_server, own_browser, keyboard_study
):
    s = keyboard_study
    item = s.queue[0]
    storage_key = f"medhelm-draft-{item.handle}"
    context = own_browser
    page = log_in(context, live_server, RATER)
    page.get_by_role("link", name="Continue rating").click()
    page.wait_for_url(rate_url(live_server, item))
    save_state = page.locator("#save-state")

    press(page, "4")
    wait_until(page, lambda: answered(item) == {"accuracy": 4}, "the first value is autosaved")
    expect(save_state).to_have_text("Draft saved")

    # The connection drops; the next digit cannot reach the server but is kept in the browser.
    context.set_offline(True)
    press(page, "2")
    expect(save_state).to_have_text(re.compile(r"^Offline: kept in this browser"))
    kept = page.evaluate("k => JSON.parse(localStorage.getItem(k))", storage_key)
    assert kept["answers"]["completeness"]["value"] == 2
    # The browser dies while still offline (a crash, a flat battery): no last-gasp save. A
    # closed tab would send one, and Chromium's offline emulation does not hold back a
    # keepalive request that outlives its page, so closing made this test a race.
    crash_renderers(page)
    page.close()
    assert answered(item) == {"accuracy": 4}, "the server must not have seen the offline change"

    # Back online, the same browser opens the item again.
    context.set_offline(False)
    page = context.new_page()
    response = page.goto(rate_url(live_server, item))
    served = response.text()
    assert re.search(r'name="c-accuracy" value="4" checked', served)
    assert not re.search(r'name="c-completeness" value="\d" checked', served)
    # ... the page restores the unsent value from localStorage and sends it.
    expect(radio(page, "completeness", 2)).to_be_checked()
    expect(radio(page, "accuracy", 4)).to_be_checked()
    wait_until(
        page,
        lambda: answered(item) == {"accuracy": 4, "completeness": 2},
        "the restored change reaches the server",
    )
    expect(page.locator("#save-state")).to_have_text("Draft saved")
    assert page.evaluate("k => localStorage.getItem(k)", storage_key) is None
    assert status_of(item) == Assignment.Status.IN_PROGRESS
