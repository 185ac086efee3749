"""Logging in through the real login form, for every browser test."""

from __future__ import annotations

import re

from playwright.sync_api import Page

from tests.factories import TEST_PASSWORD


def log_in(
    page: Page,
    live_server,
    username: str,
    *,
    password: str = TEST_PASSWORD,
    via: str | None = None,
) -> None:
    """Fill the login form and wait to land. With `via`, open that URL first, follow the
    redirect to the login form and come back to it (?next=); else land on the home page."""
    if via is None:
        page.goto(live_server.url + "/accounts/login/")
    else:
        page.goto(via)
        page.wait_for_url(re.compile(r"/accounts/login/"))
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.press("#id_password", "Enter")
    page.wait_for_url(via or live_server.url + "/")
