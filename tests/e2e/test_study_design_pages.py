"""The study-design pages as a coordinator reads them in Chromium (issue 19's review): the
import page sums up where the items landed, the dashboard sums up the items awaiting their
first rating instead of listing them, the planning page names the unit of every input and
answer, the sampling page says what a paired draw does with the model stratum, and the
calibration page offers the study's items to choose from. Each passes axe-core.

Screenshots go to /tmp/i19-ux/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from agreement.stats.planning import bonett_items
from annotation import services
from annotation.models import Assignment, CalibrationItem, Item, RatingStudy
from tests.factories import FULL_ANSWERS, make_sampling_study
from tests.support.axe import assert_accessible
from tests.support.browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/tmp/i19-ux")


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_the_design_pages_say_what_they_did(live_server, page, tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.AGREEMENT_REPORTS_IN_BACKGROUND = False
    study, coordinator, clinicians = make_sampling_study()
    base = f"{live_server.url}/studies/{study.pk}"
    log_in(page, live_server, coordinator.username)

    # import: a file of two more cases filed under an existing subcategory, one not filed
    filed = Item.objects.filter(study=study).select_related("taxonomy_node").first()
    node = filed.taxonomy_node.name
    RatingStudy.objects.filter(pk=study.pk).update(taxonomy_version=filed.taxonomy_node.version)
    upload = tmp_path / "more.jsonl"
    upload.write_text(
        "\n".join(
            json.dumps({"id": ext, "model": "gpt", "task": task, "input": "q", "output": "a"})
            for ext, task in (("extra-1", node), ("extra-2", ""))
        ),
        encoding="utf-8",
    )
    page.goto(f"{base}/import/")
    page.set_input_files("input[type=file]", str(upload))
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page.get_by_test_id("import-status")).to_contain_text("succeeded")
    filing = page.get_by_test_id("import-filing")
    n_items = Item.objects.filter(study=study).count()
    expect(page.get_by_role("heading", name=f"Where the study's {n_items} items")).to_be_visible()
    expect(filing.locator("thead th")).to_have_text(
        ["Category", "Subcategory", "gpt", "llama", "mistral", "All models"]
    )
    expect(page.get_by_test_id("filing-not-filed")).to_contain_text(
        "1 item is filed under no taxonomy node"
    )
    shot(page, "01-import-filing")
    assert_accessible(page, "the import page with its filing summary")
    Item.objects.filter(external_id__startswith="extra-").delete()

    # dashboard: nothing rated yet, so one line rather than a table of zeros
    services.assign_items(study=study, actor=coordinator, seed=1)
    page.goto(f"{base}/")
    n_items = Item.objects.filter(study=study).count()
    expect(page.get_by_test_id("short-summary")).to_have_text(
        f"All {n_items} items for clinicians await their ratings: none has a submitted rating "
        f"yet ({n_items * study.ratings_per_item} ratings to come, k = {study.ratings_per_item} "
        "per item). The list of items still short appears here once ratings arrive."
    )
    expect(page.get_by_test_id("short-items")).to_have_count(0)
    shot(page, "02-dashboard-awaiting")
    assert_accessible(page, "the dashboard before any rating")
    first = Assignment.objects.filter(clinician=clinicians[0]).order_by("position").first()
    services.submit_assignment(
        assignment_id=first.pk, clinician=clinicians[0], answers=FULL_ANSWERS
    )
    page.reload()
    expect(page.get_by_test_id("short-summary")).to_have_count(0)
    expect(page.get_by_test_id("short-items").locator("tbody tr")).to_have_count(50)

    # planning: units on every input and on the answer
    page.goto(f"{base}/agreement/plan/")
    precision = page.get_by_test_id("plan-precision")
    expect(precision.get_by_text("In ICC units (0 to 1): the upper bound minus")).to_be_visible()
    precision.get_by_label("Planned ICC(1)").fill("0.8")
    precision.get_by_label("Full width of the interval").fill("0.3")
    precision.get_by_role("button", name="Items needed").click()
    n = bonett_items(0.8, 2, 0.3).n_items
    expect(page.get_by_test_id("plan-items")).to_have_text(str(n))
    expect(page.get_by_test_id("plan-units")).to_contain_text(
        f"An item is one model output (the unit the ICC is computed over). {n} items, each "
        f"rated by 2 clinicians, make {2 * n} item ratings"
    )
    expect(page.get_by_test_id("plan-cases")).to_contain_text(
        f"{n} items of each model (an ICC per model) are {n} cases"
    )
    shot(page, "03-plan-units")
    assert_accessible(page, "the planning page with units")

    # sampling: the model stratum of a paired draw is said to be balanced by the pairing
    page.goto(f"{base}/sample/")
    form = page.get_by_test_id("draw-form")
    expect(form.get_by_label("Model", exact=True)).to_be_checked()
    expect(form).to_contain_text("In a paired draw the model is not a stratum")
    form.get_by_label("Total to draw (cases when paired, else items)").fill("6")
    form.get_by_label("Seed (blank: a new one, shown in the preview)").fill("3")
    form.get_by_role("button", name="Preview the allocation").click()
    expect(page.get_by_test_id("preview-model-by-pairing")).to_have_text(
        "Model is not a stratum of a paired draw: each drawn case brings the output of every "
        "model, so the 3 models are balanced by construction (each answers the same 6 drawn "
        "cases)."
    )
    shot(page, "04-sample-preview")
    assert_accessible(page, "the sampling page with the model note")

    # calibration: the item is chosen from the study's items, grouped by taxonomy
    page.goto(f"{base}/calibration/")
    fresh = (
        Item.objects.filter(study=study)
        .exclude(assignments__status__in=["in_progress", "submitted"])
        .order_by("pk")
        .first()
    )
    picker = page.get_by_label("Item:", exact=True)
    label = f"{fresh.external_id} · {fresh.model_name} (#{fresh.pk})"
    expect(picker.locator("option", has_text=label)).to_have_count(1)
    rated = Item.objects.get(pk=first.item_id)
    expect(picker.locator("option", has_text=f"(#{rated.pk})")).to_have_count(0)
    page.get_by_label("Find items by case, model, benchmark or taxonomy name").fill(
        fresh.external_id
    )
    page.get_by_role("button", name="Find").click()
    expect(page.get_by_test_id("calibration-choices-count")).to_contain_text(
        f"items matching “{fresh.external_id}” listed"
    )
    page.get_by_label("Item:", exact=True).select_option(label=label)
    page.get_by_label("Accuracy: reference value").fill("4")
    shot(page, "05-calibration-choose")
    page.get_by_role("button", name="Save the reference").click()
    expect(page.get_by_test_id("calibration-items")).to_contain_text(fresh.external_id)
    assert CalibrationItem.objects.get(study=study).item_id == fresh.pk
    shot(page, "06-calibration-marked")
    assert_accessible(page, "the calibration page with its item list")
