"""The panelist's progress on the questionnaire, in a real browser: "x of n answered", the
round's deadline and the save status stay in view while they scroll, and a refused
submission lists what is missing with each line linking to its question.

What the page claims is checked against the database (what the server kept).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from delphi import services
from delphi.models import PanelistRound, Response
from tests.delphi.flow import BASE_URL, PanelStudy, make_panel_study
from tests.support.axe import assert_accessible
from tests.support.browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CLOSES_AT = datetime(2031, 3, 14, 17, 30, tzinfo=UTC)


@pytest.fixture
def built(transactional_db) -> PanelStudy:
    study = make_panel_study(n_panelists=3)
    services.open_round(
        round_=study.round(1), actor=study.coordinator, base_url=BASE_URL, closes_at=CLOSES_AT
    )
    return study


def in_viewport(page: Page, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    height = page.viewport_size["height"]
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height


def test_progress_deadline_save_status_and_errors_that_link_to_their_question(
    live_server, page: Page, built: PanelStudy
):
    panelist = built.panelists[0]
    round1 = built.round(1)
    items = list(round1.items.order_by("position", "id"))
    n = len(items)
    url = live_server.url + reverse("delphi:panel_round", kwargs={"study_id": built.study.pk})
    page.set_viewport_size({"width": 1100, "height": 700})
    log_in(page, live_server, panelist.user.username, via=url)

    status = page.locator("[data-testid=panel-status]")
    expect(status).to_contain_text(f"0 of {n} answered")
    expect(status).to_contain_text("Closes 2031-03-14 17:30 UTC")
    expect(page.locator("#save-state")).to_have_text("Nothing saved yet")
    assert page.locator("footer").inner_text() == "Times are shown in UTC."

    # Rating the first item counts at once and autosaves.
    first = items[0]
    page.check(f"input[name='item-{first.pk}-rating'][value='8']")
    expect(page.locator("#answered-count")).to_have_text("1")
    expect(page.locator("#save-state")).to_have_text(
        re.compile(r"^Draft saved \d{4}-\d\d-\d\d \d\d:\d\d UTC$")
    )
    assert Response.objects.get(panelist=panelist, round_item=first).rating == 8

    # "Unable to rate" counts as answered too; the status bar stays in view at the bottom.
    last = items[-1]
    page.locator(f"#item-{last.pk}").scroll_into_view_if_needed()
    page.check(f"input[name='item-{last.pk}-unable']")
    expect(page.locator("#answered-count")).to_have_text("2")
    page.mouse.wheel(0, 20_000)
    page.wait_for_timeout(200)
    assert page.evaluate("window.scrollY") > 0
    assert in_viewport(page, "#q-status"), "the status bar scrolled out of view"
    page.wait_for_function(
        "() => document.getElementById('save-state').textContent.startsWith('Draft saved')"
    )
    assert Response.objects.get(panelist=panelist, round_item=last).unable_to_rate

    # The server renders the same count and when it last saved.
    page.reload()
    expect(status).to_contain_text(f"2 of {n} answered")
    expect(page.locator("#save-state")).to_have_text(
        re.compile(r"^Draft saved \d{4}-\d\d-\d\d \d\d:\d\d UTC$")
    )

    # Submitting with items missing: a summary, focused, one linked line per question.
    page.click("#submit-round")
    summary = page.locator("#errors")
    expect(summary).to_be_visible()
    expect(summary).to_be_focused()
    links = summary.locator("a")
    unanswered = [item for item in items if item.pk not in (first.pk, last.pk)]
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    for item in unanswered:
        assert f"#item-{item.pk}" in hrefs, f"no error links to {item.name}"
    assert "#comprehensiveness" in hrefs
    page.screenshot(path="/tmp/medhelm-panel-errors.png", full_page=False)
    target = unanswered[-1]
    summary.locator(f"a[href='#item-{target.pk}']").click()
    expect(page).to_have_url(re.compile(rf"#item-{target.pk}$"))
    section = page.locator(f"#item-{target.pk}")
    expect(section).to_have_class(re.compile(r"\bhas-error\b"))
    expect(section).to_be_focused()
    assert in_viewport(page, f"#item-{target.pk} .q-head"), "the linked question is not in view"
    assert in_viewport(page, "#q-status")
    page.screenshot(path="/tmp/medhelm-panel-linked-question.png", full_page=False)
    assert_accessible(page, "the questionnaire with its error summary")
    # Nothing was submitted, and the answers given are still the server's.
    entry = PanelistRound.objects.get(panelist=panelist, round=round1)
    assert entry.status != PanelistRound.Status.SUBMITTED
    assert Response.objects.get(panelist=panelist, round_item=first).rating == 8
    expect(status).to_contain_text(f"2 of {n} answered")
