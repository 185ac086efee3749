"""Driving the rating page in a browser: what it received, what it shows, what the server kept.

Every check that matters reads the database (what the server kept), not only the page.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.urls import reverse
from playwright.sync_api import BrowserContext, Error, Locator, Page, Response, expect

from annotation.models import Assignment, Rating
from tests.factories import MEDHELM_CRITERIA
from tests.support import browser

KEYS = tuple(c["key"] for c in MEDHELM_CRITERIA)  # accuracy, completeness, clarity
TIMEOUT_MS = 10_000

TEXT_TYPES = ("text/", "json", "javascript", "ecmascript", "xml", "css")


@dataclass
class ResponseLog:
    """Everything the browser received: headers of every response, bodies of text ones.

    A body can only be read while its document is alive, so the test settles the log (every
    request finished, every body read) before it navigates away or closes a context.
    """

    received: list[tuple[str, str]] = field(default_factory=list)  # (url, text)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    in_flight: set = field(default_factory=set)
    reading: int = 0

    def attach(self, context: BrowserContext) -> None:
        context.on("request", lambda request: self.in_flight.add(request))
        context.on("requestfinished", lambda request: self.in_flight.discard(request))
        context.on("requestfailed", lambda request: self.in_flight.discard(request))
        context.on("response", self._record)

    def _record(self, response: Response) -> None:
        self.reading += 1
        try:
            headers = "\n".join(f"{k}: {v}" for k, v in response.headers.items())
            self.received.append((response.url, headers))
            ctype = response.headers.get("content-type", "")
            if 300 <= response.status < 400 or not any(t in ctype for t in TEXT_TYPES):
                return
            self.received.append((response.url, response.text()))
        except Error as exc:  # the document went away before the body was read
            self.unreadable.append((response.url, str(exc)))
        finally:
            self.reading -= 1

    def settle(self, page: Page, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        quiet = 0  # two quiet turns in a row: no event was still queued
        while quiet < 2 and time.monotonic() < deadline:
            page.wait_for_timeout(25)  # lets Playwright deliver the pending events
            quiet = 0 if self.in_flight or self.reading else quiet + 1
        assert not self.in_flight, f"requests still open: {[r.url for r in self.in_flight]}"
        assert not self.reading, "response bodies still being read"

    def close(self, context: BrowserContext) -> None:
        self.settle(context.pages[-1])
        context.close()

    def urls(self) -> list[str]:
        return [url for url, _ in self.received]

    def containing(self, needle: str) -> list[str]:
        needle = needle.lower()
        return sorted({url for url, text in self.received if needle in text.lower()})


def rate_url(live_server, assignment: Assignment) -> str:
    path = reverse(
        "annotation:rate", kwargs={"study_id": assignment.study_id, "handle": assignment.handle}
    )
    return live_server.url + path


def log_in(context: BrowserContext, live_server, username: str) -> Page:
    """Log in through the real login form; returns the page showing the home page."""
    page = context.new_page()
    browser.log_in(page, live_server, username, via=live_server.url + "/")
    expect(page.get_by_role("heading", name="Your rating queues")).to_be_visible()
    return page


def press(page: Page, keys: str) -> None:
    for key in keys:
        page.keyboard.press(key)


def radio(page: Page, key: str, value: int) -> Locator:
    return page.locator(f"input[type=radio][name='c-{key}'][value='{value}']")


def checked_values(page: Page) -> dict[str, int]:
    """What the form shows as checked, criterion key -> value."""
    found = page.eval_on_selector_all(
        "#rating-form input[type=radio]:checked", "els => els.map(e => [e.name, e.value])"
    )
    return {name.removeprefix("c-"): int(value) for name, value in found}


def saved_values(assignment: Assignment) -> dict[str, int | None]:
    """Every rating row the server kept for an assignment, criterion key -> value."""
    return dict(
        Rating.objects.filter(assignment_id=assignment.pk).values_list("criterion__key", "value")
    )


def answered(assignment: Assignment) -> dict[str, int]:
    """The values the server kept (a draft also keeps a row, without value, per open criterion)."""
    return {k: v for k, v in saved_values(assignment).items() if v is not None}


def wait_until(
    page: Page, predicate: Callable[[], object], what: str, timeout: float = 10.0
) -> None:
    """Poll the database until the server has done something the browser started. Waits in
    the browser's time, so that Playwright keeps delivering events meanwhile."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting until {what}")
        page.wait_for_timeout(50)


def status_of(assignment: Assignment) -> str:
    return Assignment.objects.values_list("status", flat=True).get(pk=assignment.pk)
