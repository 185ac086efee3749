"""A researcher computes a report in Chromium: the request is queued, a real Celery worker
(on the site's own broker, as `make demo` runs it) computes it while the job page shows its
progress in place, and the page opens the report when it is done; its stored PDF and CSV
download. A failed job's reason stays on the reports page."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from playwright.sync_api import expect

from agreement.models import ReportJob, ReportRendering
from tests.agreement.factories import build_study
from tests.support.browser import log_in
from tests.support.celery_worker import running_worker

pytestmark = [pytest.mark.celery_worker]


@pytest.mark.timeout(600)
@pytest.mark.django_db(transaction=True)
def test_a_researcher_computes_a_report_in_the_background_and_opens_it(
    live_server, page, tmp_path, settings_in_background
):
    built = build_study(n_items=12, n_clinicians=4, leave_pending=2)
    researcher = built.members.researcher
    log_in(page, live_server, researcher.username)
    page.goto(f"{live_server.url}/studies/{built.study.pk}/agreement/")
    page.fill("#id_title", "Background report")
    page.fill("#id_n_resamples", "3000")
    page.fill("#id_seed", "11")
    page.click("[data-testid=new-report] button[type=submit]")
    page.wait_for_url(re.compile(r"/agreement/jobs/\d+/$"))
    status = page.get_by_test_id("job-status")
    expect(status).to_have_text(re.compile("Queued|Running"))
    job = ReportJob.objects.get()
    assert job.status == "queued" and job.parameters["seed"] == 11

    with running_worker(
        broker_url=settings.CELERY_BROKER_URL,
        result_backend=settings.CELERY_RESULT_BACKEND,
        log_path=tmp_path / "worker.log",
        queues=["celery"],
        # the rows and figure files in processes of the worker's own, as a production worker
        # computes them (the tests' default is one process: agreement.processes)
        extra_env={"AGREEMENT_REPORT_PROCESSES": "2"},
    ):
        # the page updates in place (no reload) while the worker computes, then opens the report
        expect(status).to_have_text("Running", timeout=120_000)
        expect(page.get_by_test_id("job-stage")).not_to_have_text("waiting for a worker")
        page.screenshot(path=str(tmp_path / "job-running.png"))
        page.wait_for_url(re.compile(r"/agreement/\d+/$"), timeout=300_000)
    job.refresh_from_db()
    assert job.status == "finished", (job.error, (tmp_path / "worker.log").read_text()[-3000:])
    assert job.cells_done == job.cells_total > 0
    expect(page.locator("h1")).to_contain_text("Background report")
    assert page.url.endswith(f"/agreement/{job.snapshot_id}/")
    assert set(
        ReportRendering.objects.filter(snapshot=job.snapshot).values_list("kind", flat=True)
    ) >= {
        "csv",
        "json",
        "pdf",
        "figures",
        "figure:scatter.svg",
        "figure:scatter.pdf",
        "figure:scatter.png",
    }
    # the stored page draws its figures from the figure files the job stored
    image = page.get_by_test_id("plot-image-scatter")
    image.scroll_into_view_if_needed()
    image.evaluate("e => e.complete ? null : new Promise(r => e.addEventListener('load', r))")
    assert image.evaluate("e => e.naturalWidth") > 100
    stored_svg = ReportRendering.objects.get(snapshot=job.snapshot, kind="figure:scatter.svg")
    shown = page.request.get(live_server.url + image.get_attribute("src"))
    assert shown.ok and shown.body() == bytes(stored_svg.content)
    for fmt, start in (("pdf", b"%PDF"), ("csv", b"report,section")):
        response = page.request.get(
            f"{live_server.url}/studies/{built.study.pk}/agreement/{job.snapshot_id}/report.{fmt}"
        )
        assert response.ok and response.body().startswith(start)


@pytest.fixture
def settings_in_background(settings):
    settings.AGREEMENT_REPORTS_IN_BACKGROUND = True
