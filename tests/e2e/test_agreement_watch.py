"""The coordinator watches agreement while clinicians rate: clinicians submit through the
rating service (one planted lenient), the dashboard at once says the figures are updating
without computing them, and once a real Celery worker has refreshed the snapshot it shows the
clinician-clinician agreement so far with its interval and item count, and flags the planted
clinician alone."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from annotation.models import AgreementWatch
from tests.factories import make_study_with_members
from tests.support.axe import assert_accessible
from tests.support.browser import log_in
from tests.support.celery_worker import running_worker
from tests.support.watch_ratings import pseudonym_of, submit_panel_ratings

pytestmark = [
    pytest.mark.browser,
    pytest.mark.celery_worker,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

SHOTS = "/tmp/i19-watch-{}.png"


def test_the_dashboard_shows_agreement_so_far_and_flags_the_planted_lenient_rater(
    live_server, page, tmp_path, settings
):
    settings.MEDHELM_WATCH_DEBOUNCE_SECONDS = 0.5
    built = make_study_with_members(n_items=40, n_clinicians=4, k=3, name="Watch study")
    lenient = built.clinicians[2]
    planted = pseudonym_of(built.study, lenient.pk)
    submit_panel_ratings(study=built.study, lenient_user_id=lenient.pk)

    log_in(page, live_server, built.coordinator.username)
    url = f"{live_server.url}/studies/{built.study.pk}/"
    page.goto(url)
    watch = page.get_by_test_id("agreement-watch")
    expect(watch.get_by_test_id("watch-updating")).to_have_text("updating…")
    expect(watch.get_by_test_id("watch-empty")).to_contain_text("being computed")
    page.screenshot(path=SHOTS.format("updating"), full_page=True)

    with running_worker(
        broker_url=settings.CELERY_BROKER_URL,
        result_backend=settings.CELERY_RESULT_BACKEND,
        log_path=tmp_path / "worker.log",
    ):
        deadline = time.time() + 120
        while time.time() < deadline:
            w = AgreementWatch.objects.get(study=built.study)
            if w.computed_at is not None and w.requested_at is None:
                break
            time.sleep(0.2)
        else:
            pytest.fail((tmp_path / "worker.log").read_text())

    page.goto(url)
    expect(watch.get_by_test_id("watch-updating")).to_have_count(0)
    expect(watch.get_by_test_id("watch-time")).to_contain_text("from 120 submitted assignments")
    expect(watch.get_by_test_id("watch-panel")).to_contain_text(
        "Clinician\N{EN DASH}clinician agreement"
    )
    expect(watch.get_by_test_id("watch-panel")).to_contain_text("95% CI")
    expect(watch.get_by_test_id("watch-items")).to_have_text("40")
    rows = watch.get_by_test_id("watch-raters").locator("tbody tr")
    expect(rows).to_have_count(4)
    expect(rows.filter(has_text=planted).get_by_test_id("watch-flag")).to_have_text("lenient")
    for honest in {pseudonym_of(built.study, c.pk) for c in built.clinicians} - {planted}:
        expect(rows.filter(has_text=honest).get_by_test_id("watch-flag")).to_have_text(
            "\N{EN DASH}"
        )
    expect(watch.get_by_test_id("watch-drift")).to_be_visible()
    watch.scroll_into_view_if_needed()
    page.screenshot(path=SHOTS.format("dashboard"), full_page=True)
    assert_accessible(page, "the dashboard with the agreement watch")
