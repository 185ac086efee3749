"""Every page of every role, opened once in Chromium: it loads with its images, draws under
the site's Content-Security-Policy with no violation, and has no serious or critical axe-core
violation.

The pages (tests/support/page_walk.py) come from the URL conf:
`test_every_route_is_visited_or_left_out_with_a_reason` fails when a route is neither in
PAGES nor in LEFT_OUT, so a new page cannot be forgotten. Each case logs in as the role that
uses the page (anonymous, clinician, coordinator, panelist, researcher, staff), opens it with
the policy listener installed (tests/support/csp.py), loads its lazy images, reads the
violations the browser saw, takes a full-page screenshot and runs axe on the page as rendered.
Both checks read the same page load: the walk was two (one per check) and cost twice the
browser time. The policy's other cases (admin pages, documents with their own policy, the
listener's own check) are in test_csp.py.
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from playwright.sync_api import Page

from tests.support.axe import assert_accessible
from tests.support.browser import log_in
from tests.support.csp import Watch, open_page, policy_of
from tests.support.page_walk import LOAD_IMAGES, PAGES, Visit, World, forgotten_routes

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = "/tmp/medhelm-axe"


def test_every_route_is_visited_or_left_out_with_a_reason():
    forgotten, stale = forgotten_routes()
    assert not forgotten, f"routes neither visited by the page walk nor left out: {forgotten}"
    assert not stale, f"routes named here that the URL conf no longer has: {stale}"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


@pytest.mark.parametrize("case", [pytest.param(p, id=p.id) for p in PAGES])
def test_page_draws_under_the_policy_and_has_no_serious_axe_violation(
    live_server, page: Page, world: World, case: Visit, request: pytest.FixtureRequest
):
    watch = Watch(page)
    url = live_server.url + reverse(case.route, kwargs=case.kwargs(world))
    if case.role != "anonymous":
        log_in(page, live_server, world.user(case.role).get_username())
    response = open_page(page, url, case.status)
    assert "default-src 'self'" in policy_of(response)
    # lazy images (the report's figures) load as a reader scrolls to them: load them all now,
    # so that the policy sees them drawn and the full-page screenshot shows them; none may
    # be broken
    broken = page.evaluate(LOAD_IMAGES)
    assert not broken, f"{url}: images that do not load: {broken}"
    # Read before axe runs: axe's own probing of the page is not the page's doing.
    assert watch.violations() == [], f"{case.id}: CSP violations"
    page.screenshot(path=f"{SCREENSHOTS}/{_slug(request.node.callspec.id)}.png", full_page=True)
    assert_accessible(page, case.id)
