"""A coordinator imports ratings from a long file in the browser: a bad file lists every
problem by line and column, the fixed file gives a summary."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import ImportedRating
from tests.factories import make_study_with_members
from tests.support.browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HEADER = "external_id,model,rater,criterion,value,comment\n"


def test_coordinator_fixes_a_bad_ratings_file_and_imports_it(live_server, page, tmp_path):
    built = make_study_with_members(n_items=3)
    bad = tmp_path / "ratings.csv"
    bad.write_text(
        HEADER + "case-0000,model-a,ext-1,accuracy,4,\n"
        "case-0001,model-a,ext-1,acuracy,3,\n"
        "case-0002,model-a,ext-2,clarity,8,\n"
    )
    log_in(page, live_server, built.coordinator.username)
    page.goto(f"{live_server.url}/studies/{built.study.pk}/")
    page.get_by_role("link", name="Import ratings").first.click()
    expect(page.get_by_role("heading", name="Test study: import ratings")).to_be_visible()

    page.set_input_files("input[type=file]", str(bad))
    page.get_by_role("button", name="Import").click()
    errors = page.get_by_test_id("long-import-errors")
    expect(errors).to_contain_text("Nothing was imported: 2 problems")
    rows = errors.locator("tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("3criterionunknown criterion 'acuracy'")
    expect(rows.nth(1)).to_contain_text("4value8 is outside the scale of clarity (1 to 5)")
    assert not ImportedRating.objects.exists()

    good = tmp_path / "fixed.csv"
    good.write_text(bad.read_text().replace("acuracy", "accuracy").replace(",8,", ",2,"))
    page.set_input_files("input[type=file]", str(good))
    page.get_by_role("button", name="Import").click()
    summary = page.get_by_test_id("long-import-summary")
    expect(summary).to_contain_text("3 lines read (CSV): 3 ratings created, 0 already present")
    expect(summary).to_contain_text("New imported raters: ext-1, ext-2.")
    assert ImportedRating.objects.filter(study=built.study).count() == 3
