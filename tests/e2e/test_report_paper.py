"""A researcher on a stored report: copies the methods paragraph, downloads Table 2 as
LaTeX, the score table as Parquet and the typeset PDF, whose text has the Table 2 values of
the JSON."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from agreement import analysis, plots, services
from tests.agreement.factories import build_study
from tests.support.browser import log_in
from tests.support.pdf import pdf_text

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SCREENSHOTS = os.environ.get("REPORT_SCREENSHOTS")  # a folder: save what the test saw


def test_researcher_copies_the_methods_and_downloads_latex_parquet_and_pdf(
    transactional_db, live_server, browser
):
    built = build_study(n_items=12, n_clinicians=4, leave_pending=2)
    snap = services.create_snapshot(
        study=built.study, actor=None, parameters={"n_resamples": 60, "seed": 5}
    )
    context = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        log_in(page, live_server, built.members.researcher.username)
        page.goto(f"{live_server.url}/studies/{built.study.pk}/agreement/{snap.pk}/")
        paragraph = page.get_by_test_id("methods-paragraph")
        assert paragraph.inner_text() == services.methods_text(snap)
        page.get_by_test_id("copy-methods").click()
        page.get_by_text("Copied.").wait_for()
        assert page.evaluate("navigator.clipboard.readText()") == services.methods_text(snap)
        if SCREENSHOTS:
            paragraph.scroll_into_view_if_needed()
            page.screenshot(path=os.path.join(SCREENSHOTS, "report-paper.png"), full_page=True)

        with page.expect_download() as latex:
            page.get_by_test_id("download-latex").click()
        assert latex.value.suggested_filename.endswith(".tex")
        with open(latex.value.path(), encoding="utf-8") as f:
            assert f.read() == services.export_latex(snap)

        with page.expect_download() as parquet:
            page.get_by_test_id("download-scores-parquet").click()
        assert parquet.value.suggested_filename.endswith("-scores.parquet")
        frame = pd.read_parquet(parquet.value.path())
        assert list(frame.columns) == list(analysis.TIDY_COLUMNS) and len(frame) > 0

        with page.expect_download() as pdf:
            page.get_by_test_id("report-head").get_by_role("link", name="PDF").click()
        with open(pdf.value.path(), "rb") as f:
            text = pdf_text(f.read())
        for c in snap.results["cells"]:
            if c["section"] == "overall" and c["status"] == "ok":
                assert (
                    f"{plots.fmt(c['estimate'])} {plots.fmt_ci(c['ci_low'], c['ci_high'])}" in text
                )
    finally:
        context.close()
