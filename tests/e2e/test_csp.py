"""Content-Security-Policy in the browser, beyond the page walk (test_page_walk.py opens
every page of every role under the policy): the admin's pages, the self-contained documents
with a policy of their own (a stored SVG figure opened by itself, the Delphi HTML report),
and one case that injects a style attribute on purpose to prove the listener
(tests/support/csp.py) sees what it must.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from playwright.sync_api import Page

from tests.support.browser import log_in
from tests.support.csp import Watch, open_page, policy_of
from tests.support.page_walk import World

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


ADMIN_PAGES = ["admin:index", "admin:auth_user_changelist", "admin:auth_user_add"]


@pytest.mark.parametrize("route", ADMIN_PAGES)
def test_admin_pages_have_no_csp_violation(live_server, page: Page, route: str):
    staff = get_user_model().objects.create_superuser(
        username="csp-staff", email="csp@example.org", password="csp-staff-password-1"
    )
    watch = Watch(page)
    log_in(page, live_server, staff.username, password="csp-staff-password-1")
    policy_of(open_page(page, live_server.url + reverse(route)))
    assert watch.violations() == [], f"{route}: CSP violations"


def test_a_stored_svg_figure_opened_by_itself_draws_under_its_own_policy(
    live_server, page: Page, world: World
):
    snapshot_id = world.report_job.snapshot_id
    study_id = world.rating.study.pk
    watch = Watch(page)
    log_in(page, live_server, world.user("researcher").get_username())
    open_page(page, live_server.url + reverse("agreement:report", args=(study_id, snapshot_id)))
    figures = page.evaluate(
        "() => [...document.images].map((i) => i.src).filter((s) => s.includes('.svg') || s.includes('/svg'))"
    )
    assert figures, "the report shows no SVG figure"
    # the figure downloads (Content-Disposition: attachment): its bytes and headers as the
    # site sends them are served again at an address that displays them
    stored = page.request.get(figures[0])
    assert stored.status == 200
    policy = policy_of(stored)
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
    open_page(page, shown)
    # matplotlib's own style rules applied: the figure's background is its white patch
    fill = page.evaluate("() => getComputedStyle(document.querySelector('#patch_1 path')).fill")
    assert fill == "rgb(255, 255, 255)", fill
    assert watch.violations() == [], "CSP violations on the figure"


def test_the_delphi_html_report_draws_under_its_own_policy(live_server, page: Page, world: World):
    study = world.delphi.study
    watch = Watch(page)
    log_in(page, live_server, world.user("delphi-coordinator").get_username())
    url = live_server.url + reverse("delphi:export", args=(study.pk, "report.html"))
    policy = policy_of(open_page(page, url))
    assert "'sha256-" in policy and "default-src 'none'" in policy
    # the report's own style sheet applied (an inline <style>, allowed by its hash)
    margin = page.evaluate("() => getComputedStyle(document.body).maxWidth")
    assert margin != "none", margin
    assert watch.violations() == [], "CSP violations on the Delphi report"


def test_the_listener_sees_an_inline_style_the_policy_refuses(
    live_server, page: Page, world: World
):
    watch = Watch(page)
    open_page(page, live_server.url + reverse("login"))
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
