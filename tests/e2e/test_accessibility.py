"""axe-core on every page of every role: 0 serious or critical violations.

The pages (tests/support/page_walk.py) come from the URL conf:
`test_every_route_is_visited_or_left_out_with_a_reason` fails when a route is neither in
PAGES nor in LEFT_OUT, so a new page cannot be forgotten.
Each case logs in as the role that uses the page (anonymous, clinician, coordinator,
panelist, researcher, staff), opens it in Chromium and runs axe on it as rendered.
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from playwright.sync_api import Page

from tests.support.axe import assert_accessible
from tests.support.browser import log_in
from tests.support.page_walk import LOAD_IMAGES, PAGES, Visit, World, forgotten_routes

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = "/tmp/medhelm-axe"


def test_every_route_is_visited_or_left_out_with_a_reason():
    forgotten, stale = forgotten_routes()
    assert not forgotten, f"routes neither visited by the axe run nor left out: {forgotten}"
    assert not stale, f"routes named here that the URL conf no longer has: {stale}"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


@pytest.mark.parametrize("case", [pytest.param(p, id=p.id) for p in PAGES])
def test_page_has_no_serious_or_critical_axe_violations(
    live_server, page: Page, world: World, case: Visit, request: pytest.FixtureRequest
):
    url = live_server.url + reverse(case.route, kwargs=case.kwargs(world))
    if case.role != "anonymous":
        log_in(page, live_server, world.user(case.role).get_username())
    response = page.goto(url)
    assert response is not None and response.status == case.status, f"{url}: {response.status}"
    page.wait_for_load_state("networkidle")
    # lazy images (the report's figures) load as a reader scrolls to them: load them all now,
    # so that the full-page screenshot shows them; none may be broken
    broken = page.evaluate(LOAD_IMAGES)
    assert not broken, f"{url}: images that do not load: {broken}"
    page.screenshot(path=f"{SCREENSHOTS}/{_slug(request.node.callspec.id)}.png", full_page=True)
    assert_accessible(page, case.id)
