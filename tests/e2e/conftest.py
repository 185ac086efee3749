"""Playwright drives Debian's Chromium against pytest-django's live server."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.support.unavailable import unavailable

# Playwright's sync API runs an event loop in this thread; Django's ORM calls made by the
# test itself (not by the server) are safe here.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser():
    if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
        unavailable(f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


@pytest.fixture
def keyboard_study(transactional_db):
    """The rating page's study: RATER's queue of eight items (tests/e2e/factories.py)."""
    from tests.e2e.factories import make_keyboard_study

    return make_keyboard_study()


@pytest.fixture
def new_context(browser):
    """Fresh browser contexts (own cookies and localStorage), all closed at the end."""
    import contextlib

    from playwright.sync_api import Error

    from tests.support.rating_page import TIMEOUT_MS

    made = []

    def make():
        context = browser.new_context()
        context.set_default_timeout(TIMEOUT_MS)
        made.append(context)
        return context

    yield make
    for context in made:
        with contextlib.suppress(Error):  # closed by the test already
            context.close()


@pytest.fixture
def world(transactional_db):
    """The data of the page walks (tests/support/page_walk.py), built as pages need it."""
    from tests.support.page_walk import World

    return World()
