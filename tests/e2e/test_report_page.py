"""The report page in Chromium: Table 2's cells show ICC and both alphas legibly, the jury
composition and the machine-score status panel are visible, the header states what the
report was computed on; the settings form takes the clinician-clinician form. A screenshot is written for a person to look at
(REPORT_SCREENSHOT, default the pytest tmp dir)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from django.test import Client
from playwright.sync_api import expect

from agreement import analysis, services
from agreement.models import ReportSnapshot
from agreement.stats.medhelm import ASKED_AGAINST_DESIGN, BY_DESIGN, PAIRWISE
from jury.models import Judge, JudgeScore
from tests.agreement.factories import build_study


def _login(context, live_server, user) -> None:
    client = Client()
    client.force_login(user)
    cookie = client.cookies["sessionid"]
    context.add_cookies([{"name": "sessionid", "value": cookie.value, "url": live_server.url}])


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_report_page_shows_alpha_compositions_and_status(live_server, browser, tmp_path):
    built = build_study(n_items=12, n_clinicians=4, leave_pending=2)
    third = Judge.objects.create(name="llama-judge", provider="imported", model_id="l", weight=2.0)
    for i, item in enumerate(built.items):
        for criterion in built.study.criteria.all():
            JudgeScore.objects.create(
                item=item, judge=third, criterion=criterion, value=float(1 + (i * 7) % 5)
            )
    snap = services.create_snapshot(
        study=built.study, actor=None, parameters={"n_resamples": 40, "seed": 1}
    )
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    _login(context, live_server, built.members.coordinator)
    page = context.new_page()
    page.goto(f"{live_server.url}/studies/{built.study.pk}/agreement/{snap.pk}/")
    table = page.locator("[data-testid=table2]")
    table.wait_for()
    ok_cells = [
        c for c in snap.results["cells"] if c["section"] == "overall" and c["status"] == "ok"
    ]
    alphas = table.locator("[data-testid=alpha]")
    assert alphas.count() == 2 * len(ok_cells) > 0
    first = alphas.first
    assert first.is_visible()
    assert "\u03b1 interval" in first.inner_text()
    size = first.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
    assert size >= 12  # legible
    # Each alpha line sits inside its cell (no overflow into the next column).
    box, cell_box = first.bounding_box(), first.locator("xpath=..").bounding_box()
    assert (
        box["x"] >= cell_box["x"]
        and box["x"] + box["width"] <= cell_box["x"] + cell_box["width"] + 1
    )
    composition = page.locator("[data-testid=jury-composition]")
    assert composition.is_visible()
    assert "jury without llama-judge" in composition.inner_text()
    panel = page.locator("[data-testid=status-panel]")
    expect(panel.get_by_test_id("input-status")).to_contain_text("llama-judge")
    assert "Computed on:" in page.locator("[data-testid=computed-on]").inner_text()
    # the figures are images of the stored SVG files: each one loads and is drawn, with a
    # text alternative naming it; its URL answers the stored bytes as SVG
    figures = {f["key"]: f for f in services.page_figures(snap)}
    drawn = [key for key, f in figures.items() if f["svg"]]
    assert drawn
    for key, figure in figures.items():
        block = page.get_by_test_id(f"plot-{key}")
        if not figure["svg"]:
            assert f"No plot: {figure['note']}" in block.inner_text()
            continue
        image = page.get_by_test_id(f"plot-image-{key}")
        image.scroll_into_view_if_needed()
        image.evaluate("e => e.complete ? null : new Promise(r => e.addEventListener('load', r))")
        assert image.evaluate("e => e.naturalWidth") > 100, key
        assert image.bounding_box()["height"] > 100, key
        assert image.get_attribute("alt").startswith(f"{figure['title']}, "), key
        response = page.request.get(live_server.url + image.get_attribute("src"))
        assert response.ok and response.headers["content-type"] == "image/svg+xml"
        assert response.body() == services.export_figure(snap, key, "svg")
    page.get_by_test_id("plots").screenshot(
        path=str(
            Path(os.environ.get("REPORT_SCREENSHOT", tmp_path / "report.png")).with_name(
                "report-plots.png"
            )
        )
    )
    out = Path(os.environ.get("REPORT_SCREENSHOT", tmp_path / "report.png"))
    page.screenshot(path=str(out), full_page=True)
    assert out.stat().st_size > 10_000
    context.close()


@pytest.mark.browser
@pytest.mark.timeout(600)
@pytest.mark.django_db(transaction=True)
def test_a_researcher_chooses_the_clinician_form_in_the_settings_form(
    live_server, browser, settings
):
    settings.AGREEMENT_REPORTS_IN_BACKGROUND = False  # computed in the request: no worker here
    built = build_study(n_items=12, n_clinicians=4, leave_pending=2)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    _login(context, live_server, built.members.researcher)
    page = context.new_page()
    page.goto(f"{live_server.url}/studies/{built.study.pk}/agreement/")
    choice = page.get_by_label("Clinician-clinician form")
    expect(choice).to_have_value(BY_DESIGN)
    page.fill("#id_n_resamples", "10")
    page.fill("#id_seed", "3")
    choice.select_option(PAIRWISE)
    # the report is computed in the request: on a loaded machine that outlasts a click's wait
    page.click("[data-testid=new-report] button[type=submit]", no_wait_after=True)
    page.wait_for_url(re.compile(r"/agreement/\d+/$"), timeout=300_000)
    snap = ReportSnapshot.objects.get(study=built.study)
    assert snap.parameters["clinician_form"] == PAIRWISE
    expect(page.get_by_test_id("clinician-form-method")).to_contain_text(
        analysis.clinician_form_rule(PAIRWISE)
    )
    # the study's design would give the one-way form: Table 2 says the pair mean was asked for
    expect(page.get_by_test_id("table2")).to_contain_text(ASKED_AGAINST_DESIGN)
    context.close()
