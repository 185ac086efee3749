"""The audit log in Chromium: a coordinator opens it from the dashboard, narrows it to one
action, reads the row (who, what, before and after) and downloads those rows as CSV; the
page passes axe-core. A rater who types its address is refused."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from annotation import services
from annotation.models import Assignment, StudyMembership
from tests.factories import make_study_with_members
from tests.support.axe import assert_accessible
from tests.support.browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS_DIR = os.environ.get("E2E_SHOTS_DIR")


def shot(page: Page, name: str) -> None:
    if SHOTS_DIR:
        Path(SHOTS_DIR).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS_DIR) / f"{name}.png"), full_page=True)


def test_a_coordinator_filters_the_log_and_downloads_it(live_server, page):
    built = make_study_with_members(n_items=3, n_clinicians=2, k=1, name="Discharge notes")
    rater = built.clinicians[0]
    assignment = Assignment.objects.filter(clinician=rater).order_by("position").first()
    services.flag_assignment(
        assignment_id=assignment.pk, clinician=rater, flagged=True, reason="=cmd|' /C calc'!A0"
    )
    pseudonym = StudyMembership.objects.get(study=built.study, user=rater).pseudonym

    log_in(page, live_server, built.coordinator.username)
    page.goto(f"{live_server.url}/studies/{built.study.pk}/")
    page.get_by_role("link", name="Audit log").click()
    page.wait_for_url(f"{live_server.url}/studies/audit/?study={built.study.pk}")
    expect(page.get_by_label("Study")).to_have_value(str(built.study.pk))
    page.get_by_label("Action").select_option("assignment.flag")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**action=assignment.flag**")
    expect(page.get_by_test_id("audit-count")).to_contain_text("1 row.")
    row = page.locator("table.audit tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text(rater.username)
    expect(row).to_contain_text(pseudonym)
    expect(row).to_contain_text("=cmd|' /C calc'!A0")
    assert_accessible(page, "the audit log")
    shot(page, "audit-log-filtered")

    with page.expect_download() as download:
        page.get_by_test_id("audit-csv").click()
    body = Path(download.value.path()).read_text()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert [r["action"] for r in rows] == ["assignment.flag"]
    assert "=cmd" in rows[0]["after"] and rows[0]["after"].startswith("{")

    page.get_by_role("link", name="Clear").click()
    expect(page.locator("table.audit tbody tr").first).to_be_visible()
    assert page.locator("table.audit tbody tr").count() > 1


def test_a_rater_is_refused(live_server, page):
    built = make_study_with_members(n_items=2, n_clinicians=1, k=1)
    log_in(page, live_server, built.clinicians[0].username)
    response = page.goto(f"{live_server.url}/studies/audit/?study={built.study.pk}")
    assert response.status == 403
    expect(page.locator("body")).not_to_contain_text("assignment.")
