"""The coordinator's pages in Chromium: a flagged item opened from the dashboard and its flag
resolved with a note (which the rater then sees; a clinician never reaches the item page),
the jury run page following its run without a reload, and an import whose format is read
from the file. Each page passes axe-core (no serious or critical violation)."""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from annotation import services as annotation_services
from annotation.models import Assignment, AuditEvent, ImportJob, Item, StudyMembership
from jury import services as jury_services
from jury.models import JudgeCall, JuryRun
from tests.factories import make_study_with_members
from tests.jury.factories import make_judge
from tests.support.axe import assert_accessible
from tests.support.browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Set E2E_SHOTS_DIR to keep a screenshot of each state (for reviewing wording and layout).
SHOTS_DIR = os.environ.get("E2E_SHOTS_DIR")


def shot(page: Page, name: str) -> None:
    if SHOTS_DIR:
        Path(SHOTS_DIR).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS_DIR) / f"{name}.png"), full_page=True)


def test_coordinator_resolves_a_flag_from_the_dashboard(live_server, page, browser):
    built = make_study_with_members(n_items=4, n_clinicians=2, k=2)
    rater = built.clinicians[0]
    assignment = Assignment.objects.filter(clinician=rater).order_by("position").first()
    annotation_services.flag_assignment(
        assignment_id=assignment.pk, clinician=rater, flagged=True, reason="reference is outdated"
    )
    item = assignment.item
    pseudonym = StudyMembership.objects.get(study=built.study, user=rater).pseudonym

    log_in(page, live_server, built.coordinator.username)
    page.goto(f"{live_server.url}/studies/{built.study.pk}/")
    flagged = page.get_by_test_id("flagged")
    row = flagged.locator("tbody tr").first
    expect(row).to_contain_text(item.model_name)
    expect(row).to_contain_text("reference is outdated")
    assert_accessible(page, "the dashboard")
    shot(page, "dashboard-flag-open")

    row.get_by_role("link", name=item.external_id).click()
    page.wait_for_url(f"{live_server.url}/studies/{built.study.pk}/items/{item.pk}/")
    expect(page.get_by_test_id("item-model")).to_have_text(item.model_name)
    history = page.get_by_test_id("flag-history")
    expect(history).to_contain_text(pseudonym)
    expect(history).to_contain_text("reference is outdated")
    assert_accessible(page, "the item page with an open flag")
    shot(page, "item-flag-open")

    # An empty note is refused, and says so beside the form.
    page.get_by_role("button", name="Resolve flag").click()  # the browser's required check
    assert not AuditEvent.objects.filter(action="assignment.flag_resolve").exists()
    page.get_by_label("How was it resolved?").fill("Reference updated to the 2024 guideline.")
    page.get_by_role("button", name="Resolve flag").click()
    expect(page.locator(".messages")).to_contain_text("Flag resolved")
    expect(page.get_by_test_id("resolution")).to_contain_text(
        f"Resolved by {built.coordinator.username}"
    )
    expect(history).to_contain_text("resolved")
    expect(history).to_contain_text("Reference updated to the 2024 guideline.")
    expect(page.get_by_role("button", name="Resolve flag")).to_have_count(0)
    assert_accessible(page, "the item page with a resolved flag")
    shot(page, "item-flag-resolved")
    assignment.refresh_from_db()
    assert assignment.flag_resolution == "Reference updated to the 2024 guideline."
    assert (
        AuditEvent.objects.filter(action="assignment.flag_resolve", actor=built.coordinator).count()
        == 1
    )

    page.goto(f"{live_server.url}/studies/{built.study.pk}/")
    expect(page.get_by_test_id("flagged").locator("tbody tr").first).to_contain_text(
        "resolved: Reference updated to the 2024 guideline."
    )

    # The rater sees the note in their queue, and never reaches the item page.
    rater_page = browser.new_context().new_page()
    try:
        log_in(rater_page, live_server, rater.username)
        rater_page.goto(f"{live_server.url}/studies/{built.study.pk}/queue/")
        expect(rater_page.get_by_test_id("flag-resolution")).to_contain_text(
            "flag resolved: Reference updated to the 2024 guideline."
        )
        assert_accessible(rater_page, "the rater's queue with a resolved flag")
        shot(rater_page, "queue-flag-resolved")
        response = rater_page.goto(f"{live_server.url}/studies/{built.study.pk}/items/{item.pk}/")
        assert response.status == 403
        assert item.model_name not in rater_page.content()
    finally:
        rater_page.context.close()


def _finish(run: JuryRun, n: int) -> None:
    """End `n` pending calls as a worker would, the last one now, a second apart."""
    now = timezone.now()
    calls = list(run.calls.filter(status="pending").order_by("pk")[:n])
    for i, call in enumerate(calls):
        JudgeCall.objects.filter(pk=call.pk).update(
            status="ok", finished_at=now - timedelta(seconds=len(calls) - 1 - i)
        )
    # A call was just sent: the run is being worked on (not "waiting for a worker").
    run.calls.filter(status="pending").update(dispatched_at=now)


def test_the_jury_run_page_updates_in_place(live_server, page):
    built = make_study_with_members(n_items=8, n_clinicians=2, k=2)
    judge = make_judge(name="gpt")
    run = jury_services.start_run(study=built.study, judges=[judge], actor=None, dispatch=False)
    JuryRun.objects.filter(pk=run.pk).update(status="running", started_at=timezone.now())
    run.calls.update(dispatched_at=timezone.now())

    log_in(page, live_server, built.coordinator.username)
    page.goto(f"{live_server.url}/studies/{built.study.pk}/jury/runs/{run.pk}/")
    progress = page.get_by_test_id("run-progress")
    done = progress.locator('[data-field="done"]')
    expect(done).to_have_text("0")
    expect(page.get_by_test_id("run-eta")).to_have_text("time left: estimating…")
    resume = page.get_by_role("button", name="Resume: score what is missing or failed")
    cancel = page.get_by_role("button", name="Cancel")
    expect(resume).to_be_hidden()
    expect(cancel).to_be_visible()
    page.evaluate("() => { window.__sameDocument = 'still here'; }")
    assert_accessible(page, "the running jury run page")
    shot(page, "run-live-start")

    # A poll that fails says so on the page, and polling goes on.
    page.route("**/status.json", lambda route: route.fulfill(status=500, body="boom"))
    refresh = page.get_by_test_id("run-refresh")
    expect(refresh).to_contain_text("Could not update the run's status", timeout=10_000)
    expect(refresh).to_contain_text("HTTP 500")
    page.unroute("**/status.json")

    _finish(run, 5)
    expect(done).to_have_text("5", timeout=10_000)
    expect(refresh).to_have_text("")
    expect(progress.locator('[data-field="remaining"]')).to_have_text("3")
    expect(page.get_by_test_id("run-eta")).to_have_text(re.compile(r"about \d+ s left"))
    health = page.get_by_test_id("judge-health").locator("tbody tr").first
    expect(health).to_contain_text("ok 5")
    expect(health).to_contain_text("pending 3")
    assert page.evaluate("() => window.__sameDocument") == "still here"
    assert page.locator("progress").first.evaluate("el => el.value") == 62
    shot(page, "run-live-counting")

    # Stopped: the state changes in place, Cancel goes and Resume comes.
    jury_services.cancel_run(run=run, actor=built.coordinator)
    expect(page.locator('h1 [data-field="status_display"]')).to_have_text(
        "Cancelled", timeout=10_000
    )
    expect(resume).to_be_visible()
    expect(cancel).to_be_hidden()
    expect(page.get_by_test_id("run-refresh")).to_contain_text("The run is cancelled.")
    assert page.evaluate("() => window.__sameDocument") == "still here"
    assert_accessible(page, "the stopped jury run page")
    shot(page, "run-live-cancelled")


def test_the_run_form_picks_models_and_nodes_from_lists(live_server, page, monkeypatch):
    monkeypatch.setenv("MEDHELM_JUDGE_KEY_FAKE", "sk-test")
    built = make_study_with_members(n_items=4, n_clinicians=2, k=2)
    Item.objects.filter(study=built.study, external_id__in=["case-0002", "case-0003"]).update(
        model_name="model-b"
    )
    judge = make_judge(name="gpt")
    log_in(page, live_server, built.coordinator.username)
    page.goto(f"{live_server.url}/studies/{built.study.pk}/jury/")
    page.get_by_label("gpt", exact=True).check()
    page.get_by_label("model-b (2 items)").check()
    expect(page.get_by_label("Taxonomy node")).to_have_value("")
    assert_accessible(page, "the jury runs page")
    shot(page, "runs-form")
    page.get_by_role("button", name="Start").click()
    page.wait_for_url(re.compile(r"/jury/runs/\d+/$"))
    run = JuryRun.objects.get()
    assert run.filters == {"models": ["model-b"]} and run.calls.count() == 2
    assert list(run.judges.all()) == [judge]


def test_an_import_reads_its_format_from_the_file(live_server, page, tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    built = make_study_with_members(n_items=1)
    # A CSV file named as JSON Lines: read as JSON Lines it gave one "not valid JSON" per line.
    upload = tmp_path / "new-items.jsonl"
    upload.write_text(
        "external_id,model,input,output\n"
        "n-1,model-z,Question one,Answer one\n"
        "n-2,model-z,Question two,Answer two\n"
        "n-3,model-z,Question three,Answer three\n"
    )
    log_in(page, live_server, built.coordinator.username)
    page.goto(f"{live_server.url}/studies/{built.study.pk}/import/")
    expect(page.get_by_label("Format")).to_have_value("auto")
    assert_accessible(page, "the import page")
    page.set_input_files("input[type=file]", str(upload))
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_test_id("import-status")).to_contain_text("succeeded")
    expect(page.get_by_test_id("import-format")).to_contain_text("CSV, detected from the content")
    expect(page.get_by_test_id("import-format")).to_contain_text("the name ends in .jsonl")
    assert Item.objects.filter(study=built.study, model_name="model-z").count() == 3
    assert_accessible(page, "the import page after a detected import")
    shot(page, "import-detected")

    # Forcing JSON Lines on the same file: it fails, shown as failed (no full bar), and the
    # page says the file looks like CSV.
    page.get_by_label("Format").select_option("jsonl")
    page.set_input_files("input[type=file]", str(upload))
    page.get_by_role("button", name="Import").click()
    status = page.get_by_test_id("import-status")
    expect(status).to_contain_text("failed")
    expect(page.get_by_test_id("import-progress").locator("progress")).to_have_count(0)
    expect(page.get_by_test_id("import-format")).to_contain_text(
        "JSON Lines, as chosen; but the file looks like CSV"
    )
    expect(page.get_by_test_id("import-progress")).to_contain_text("not valid JSON")
    assert ImportJob.objects.filter(study=built.study, status="failed").count() == 1
    assert_accessible(page, "the import page after a failed import")
    shot(page, "import-failed")
