"""Content-Security-Policy in the browser: no violation on any page of any role.

The same walk as the axe test (tests/support/page_walk.py). Before any script of the page
runs, a listener records every `securitypolicyviolation` event; Chromium's console messages
about the policy are recorded too. Each page is opened as its role, its images (the report's
stored SVG figures) loaded, and then no violation may have been seen. The self-contained
documents with a policy of their own (a stored SVG figure opened by itself, the Delphi HTML
report) are opened the same way, and one case injects a style attribute on purpose to prove
the listener sees what it must.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from playwright.sync_api import Page

from tests.support.browser import log_in
from tests.support.page_walk import LOAD_IMAGES, PAGES, Visit, World

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

#: Installed before the page's own scripts: every violation, as the browser reports it.
LISTEN = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push({directive: e.violatedDirective, blocked: e.blockedURI,
                               sample: e.sample, source: e.sourceFile, line: e.lineNumber});
});
"""


class Watch:
    """The policy violations a page reported: its events and Chromium's console lines."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.console: list[str] = []
        page.add_init_script(LISTEN)
        page.on("console", self._console)

    def _console(self, message: Any) -> None:
        if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text:
            self.console.append(message.text)

    def violations(self) -> list[Any]:
        events = self.page.evaluate("() => window.__cspViolations || []")
        return [*events, *self.console]


def _policy_of(response: Any) -> str:
    policy = response.headers.get("content-security-policy", "")
    assert policy, f"{response.url}: no Content-Security-Policy header"
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy, policy
    return policy


def _open(page: Page, url: str, status: int = 200) -> Any:
    response = page.goto(url)
    assert response is not None and response.status == status, f"{url}: {response.status}"
    page.wait_for_load_state("networkidle")
    return response


@pytest.mark.parametrize("case", [pytest.param(p, id=p.id) for p in PAGES])
def test_page_has_no_csp_violation(live_server, page: Page, world: World, case: Visit):
    watch = Watch(page)
    url = live_server.url + reverse(case.route, kwargs=case.kwargs(world))
    if case.role != "anonymous":
        log_in(page, live_server, world.user(case.role).get_username())
    response = _open(page, url, case.status)
    policy = _policy_of(response)
    assert "default-src 'self'" in policy
    broken = page.evaluate(LOAD_IMAGES)
    assert not broken, f"{url}: images that do not load: {broken}"
    page.wait_for_load_state("networkidle")
    assert watch.violations() == [], f"{case.id}: CSP violations"


ADMIN_PAGES = ["admin:index", "admin:auth_user_changelist", "admin:auth_user_add"]


@pytest.mark.parametrize("route", ADMIN_PAGES)
def test_admin_pages_have_no_csp_violation(live_server, page: Page, route: str):
    staff = get_user_model().objects.create_superuser(
        username="csp-staff", email="csp@example.org", password="csp-staff-password-1"
    )
    watch = Watch(page)
    log_in(page, live_server, staff.username, password="csp-staff-password-1")
    _policy_of(_open(page, live_server.url + reverse(route)))
    assert watch.violations() == [], f"{route}: CSP violations"


def test_a_stored_svg_figure_opened_by_itself_draws_under_its_own_policy(
    live_server, page: Page, world: World
):
    snapshot_id = world.report_job.snapshot_id
    study_id = world.rating.study.pk
    watch = Watch(page)
    log_in(page, live_server, world.user("researcher").get_username())
    _open(page, live_server.url + reverse("agreement:report", args=(study_id, snapshot_id)))
    figures = page.evaluate(
        "() => [...document.images].map((i) => i.src).filter((s) => s.includes('.svg') || s.includes('/svg'))"
    )
    assert figures, "the report shows no SVG figure"
    # the figure downloads (Content-Disposition: attachment): its bytes and headers as the
    # site sends them are served again at an address that displays them
    stored = page.request.get(figures[0])
    assert stored.status == 200
    policy = _policy_of(stored)
    assert "'sha256-" in policy and "script-src" not in policy and "default-src 'none'" in policy
    shown = live_server.url + "/figure-as-the-site-sends-it.svg"
    page.route(
        shown,
        lambda route: route.fulfill(
            status=200,
            body=stored.body(),
            headers={
                "content-type": stored.headers["content-type"],
                "content-security-policy": policy,
            },
        ),
    )
    _open(page, shown)
    # matplotlib's own style rules applied: the figure's background is its white patch
    fill = page.evaluate("() => getComputedStyle(document.querySelector('#patch_1 path')).fill")
    assert fill == "rgb(255, 255, 255)", fill
    assert watch.violations() == [], "CSP violations on the figure"


def test_the_delphi_html_report_draws_under_its_own_policy(live_server, page: Page, world: World):
    study = world.delphi.study
    watch = Watch(page)
    log_in(page, live_server, world.user("delphi-coordinator").get_username())
    url = live_server.url + reverse("delphi:export", args=(study.pk, "report.html"))
    policy = _policy_of(_open(page, url))
    assert "'sha256-" in policy and "default-src 'none'" in policy
    # the report's own style sheet applied (an inline <style>, allowed by its hash)
    margin = page.evaluate("() => getComputedStyle(document.body).maxWidth")
    assert margin != "none", margin
    assert watch.violations() == [], "CSP violations on the Delphi report"


def test_the_listener_sees_an_inline_style_the_policy_refuses(
    live_server, page: Page, world: World
):
    watch = Watch(page)
    _open(page, live_server.url + reverse("login"))
    page.evaluate(
        """() => { const d = document.createElement('div');
                   d.innerHTML = '<p style="color: red">injected</p>';
                   document.body.append(d); }"""
    )
    page.wait_for_function("() => window.__cspViolations.length > 0")
    violations = watch.violations()
    assert any(
        isinstance(v, dict) and v["directive"].startswith("style-src") for v in violations
    ), violations
