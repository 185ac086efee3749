"""The sampling page in Chromium: a coordinator opens it from the study's navigation,
previews a proportional paired draw, confirms it, sees the draw in force, is refused a quota
above its stratum (named), and assignment then deals only the drawn items. Passes axe-core."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation import services
from annotation.models import Assignment, SampleDraw
from tests.factories import make_sampling_study
from tests.support.axe import assert_accessible
from tests.support.browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_coordinator_previews_confirms_and_is_refused_a_quota(live_server, page):
    study, coordinator, _ = make_sampling_study(missing={"Imaging-01": "llama"})
    log_in(page, live_server, coordinator.username)
    page.goto(f"{live_server.url}/studies/{study.pk}/")
    page.get_by_role("link", name="Draw the sample").first.click()
    page.wait_for_url(f"{live_server.url}/studies/{study.pk}/sample/")
    assert_accessible(page, "the sampling page")

    form = page.get_by_test_id("draw-form")
    form.get_by_label("Total to draw (cases when paired, else items)").fill("27")
    form.get_by_label("Seed (blank: a new one, shown in the preview)").fill("2024")
    form.get_by_role("button", name="Preview the allocation").click()
    preview = page.get_by_test_id("preview")
    expect(page.get_by_test_id("preview-total")).to_have_text("27")
    expect(preview.get_by_test_id("preview-strata")).to_contain_text("Diagnosis / Imaging")
    expect(page.get_by_test_id("preview-unpaired")).to_contain_text("Imaging-01")
    assert not SampleDraw.objects.exists()
    assert_accessible(page, "the sampling page with a preview")

    # a smaller draw, previewed and confirmed
    form = page.get_by_test_id("draw-form")
    form.get_by_label("Total to draw (cases when paired, else items)").fill("9")
    form.get_by_role("button", name="Preview the allocation").click()
    expect(page.get_by_test_id("preview-total")).to_have_text("9")
    page.screenshot(path="/tmp/i19-sample-preview.png", full_page=True)
    page.get_by_role("button", name="Confirm this draw").click()
    current = page.get_by_test_id("current-draw")
    expect(page.get_by_test_id("draw-seed")).to_have_text("2024")
    expect(page.get_by_test_id("draw-items")).to_have_text("27")
    expect(current).to_contain_text("Diagnosis / Differential")
    page.screenshot(path="/tmp/i19-sample-drawn.png", full_page=True)
    record = SampleDraw.objects.get()
    assert record.seed == 2024 and record.items.count() == 27

    form = page.get_by_test_id("draw-form")
    form.get_by_label("Quotas per stratum").check()
    form.get_by_label("Quotas, one a line: stratum = n (labels as in the preview)").fill(
        "Diagnosis / Imaging = 7"
    )
    form.get_by_role("button", name="Preview the allocation").click()
    expect(page.get_by_text("'Diagnosis / Imaging' is more than its 6 units")).to_be_visible()
    assert_accessible(page, "the sampling page with a refused quota")
    assert SampleDraw.objects.count() == 1

    services.assign_items(study=study, actor=coordinator, seed=3)
    dealt = set(Assignment.objects.filter(study=study).values_list("item_id", flat=True))
    assert dealt == set(record.items.values_list("pk", flat=True))
