"""Logging out clears the rating page's drafts kept in the browser's localStorage: through
the logout response's Clear-Site-Data header, and through the login page's script when a
browser ignores the header."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.factories import RATER
from tests.support.rating_page import log_in, press, rate_url

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _draft_then_log_out(live_server, context, item):
    storage_key = f"medhelm-draft-{item.handle}"
    page = log_in(context, live_server, RATER)
    page.goto(rate_url(live_server, item))
    # A change that cannot reach the server is kept in localStorage (as rate.js does offline).
    context.set_offline(True)
    press(page, "4")
    expect(page.locator("#save-state")).to_have_text(re.compile(r"^Offline: kept in this browser"))
    assert page.evaluate("k => localStorage.getItem(k)", storage_key) is not None
    page.evaluate("() => localStorage.setItem('medhelm-draft-unrelated-check', '{}')")
    context.set_offline(False)
    return page


def _stored_keys(page) -> list[str]:
    return page.evaluate("() => Object.keys(localStorage)")


def test_logout_clears_drafts_with_clear_site_data(live_server, new_context, keyboard_study):
    """The header alone: the login page's script is blocked here."""
    context = new_context()
    page = _draft_then_log_out(live_server, context, keyboard_study.queue[0])
    page.evaluate("() => localStorage.setItem('medhelm-shortcuts-off', '1')")
    context.route(re.compile(r"/accounts/logged_out\.[0-9a-f.]*js$"), lambda route: route.abort())
    with page.expect_response(re.compile(r"/accounts/logout/$")) as logout:
        page.get_by_role("button", name="Log out").click()
    assert logout.value.all_headers().get("clear-site-data") == '"storage"'
    page.wait_for_url(re.compile(r"/accounts/login/\?logged_out=1$"))
    expect(page.get_by_text("You are logged out.")).to_be_visible()
    # Clear-Site-Data "storage" empties the site's localStorage: drafts and the rest.
    assert _stored_keys(page) == []


def test_logout_clears_drafts_without_the_header(live_server, new_context, keyboard_study):
    """A browser that ignores Clear-Site-Data: the header is taken off the response here,
    and the login page's script removes the drafts."""
    context = new_context()
    page = _draft_then_log_out(live_server, context, keyboard_study.queue[0])
    page.evaluate("() => localStorage.setItem('medhelm-shortcuts-off', '1')")

    def strip_header(route):
        response = route.fetch(max_redirects=0)
        headers = {k: v for k, v in response.headers.items() if k.lower() != "clear-site-data"}
        route.fulfill(response=response, headers=headers)

    context.route(re.compile(r"/accounts/logout/$"), strip_header)
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(re.compile(r"/accounts/login/\?logged_out=1$"))
    expect(page.get_by_text("You are logged out.")).to_be_visible()
    keys = _stored_keys(page)
    assert not [k for k in keys if k.startswith("medhelm-draft-")]
    # The script removes drafts only: the header's absence is real (a preference survived).
    assert "medhelm-shortcuts-off" in keys
