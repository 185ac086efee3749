"""The planning page in Chromium: a coordinator opens it from the dashboard, asks how many
items a precise ICC needs, sees a bad input named under its field, and simulates a design
(computed in the request here, posted), then queues one, follows it and cancels another. The
page passes axe-core."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from agreement.stats.planning import bonett_items
from tests.factories import make_study_with_members
from tests.support.axe import assert_accessible
from tests.support.browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_coordinator_plans_the_sample(live_server, page, settings):
    settings.AGREEMENT_REPORTS_IN_BACKGROUND = False
    built = make_study_with_members(n_items=2, n_clinicians=3, k=3)
    log_in(page, live_server, built.coordinator.username)
    page.goto(f"{live_server.url}/studies/{built.study.pk}/")
    page.get_by_role("link", name="Plan the sample").first.click()
    page.wait_for_url(f"{live_server.url}/studies/{built.study.pk}/agreement/plan/")
    assert_accessible(page, "the planning page")

    precision = page.get_by_test_id("plan-precision")
    expect(precision.get_by_label("Raters per item (k)")).to_have_value("3")
    precision.get_by_label("Planned ICC(1)").fill("0.8")
    precision.get_by_label("Full width of the interval").fill("0.2")
    precision.get_by_role("button", name="Items needed").click()
    expected = bonett_items(0.8, 3, 0.2).n_items
    answer = page.get_by_test_id("plan-precision").get_by_test_id("plan-items")
    expect(answer).to_have_text(str(expected))
    assert_accessible(page, "the planning page with an answer")

    power = page.get_by_test_id("plan-power")
    power.get_by_label("ICC under the null (rho0)").fill("0.8")
    power.get_by_label("ICC expected (rho1)").fill("0.7")
    power.get_by_role("button", name="Items needed").click()
    rho1 = page.get_by_test_id("plan-power").get_by_label("ICC expected (rho1)")
    described = rho1.get_attribute("aria-describedby") or ""
    error_id = next(part for part in described.split() if part.endswith("_error"))
    expect(page.locator(f"#{error_id}")).to_contain_text("must be above rho0")
    assert_accessible(page, "the planning page with an input error")

    sim = page.get_by_test_id("plan-simulation")
    sim.get_by_label("Items").fill("40")
    sim.get_by_label("Simulated studies").fill("50")
    sim.get_by_role("button", name="Simulate").click()
    result = page.get_by_test_id("simulation-result")
    expect(result).to_contain_text("icc_oneway_unbalanced")
    median = float(page.get_by_test_id("simulation-median").inner_text())
    assert 0 < median < 1


def test_a_queued_simulation_shows_progress_then_its_result(live_server, page, settings):
    # the worker's side is written into the session's real result backend from here (a real
    # worker runs in tests/agreement/planning/test_simulation_worker.py): the page posts the
    # simulation, lands on its status page, polls it and, once the task has ended, shows the
    # result
    from celery import current_app

    from agreement.models import PlanningSimulation
    from agreement.services import planning

    settings.AGREEMENT_REPORTS_IN_BACKGROUND = True
    built = make_study_with_members(n_items=2, n_clinicians=3, k=3)
    log_in(page, live_server, built.coordinator.username)
    page.goto(f"{live_server.url}/studies/{built.study.pk}/agreement/plan/")
    sim = page.get_by_test_id("plan-simulation")
    sim.get_by_label("Raters in the study (R)").fill("3")
    sim.get_by_label("Raters per item (k)").fill("3")
    sim.get_by_label("Items").fill("40")
    sim.get_by_label("Simulated studies").fill("30")
    sim.get_by_role("button", name="Simulate").click()
    expect(page.get_by_test_id("simulation-status")).to_have_attribute("data-state", "waiting")
    record = PlanningSimulation.objects.get(study=built.study)
    spec = planning.design_spec(record.spec)
    assert (spec.n_items, spec.raters_per_item, spec.n_studies) == (40, 3, 30)
    backend = current_app.backend
    meta = {"study_id": built.study.pk, "done": 10, "total": 30}
    backend.store_result(record.task_id, meta, "PROGRESS")
    expect(page.get_by_test_id("simulation-progress")).to_contain_text("10 of 30 studies")
    assert_accessible(page, "a running simulation")
    result = planning.run_simulation(spec, study_id=built.study.pk)
    backend.mark_as_done(record.task_id, result)
    expect(page.get_by_test_id("simulation-result")).to_be_visible(timeout=15000)
    expect(page.get_by_test_id("simulation-median")).to_have_text(f"{result['width_median']:.3f}")
    expect(page.get_by_test_id("simulation-status")).to_have_attribute("data-state", "finished")


def test_a_queued_simulation_is_cancelled_from_its_page(live_server, page, settings):
    from agreement.models import PlanningSimulation

    settings.AGREEMENT_REPORTS_IN_BACKGROUND = True
    built = make_study_with_members(n_items=2, n_clinicians=3, k=3)
    log_in(page, live_server, built.researcher.username)
    page.goto(f"{live_server.url}/studies/{built.study.pk}/agreement/plan/")
    page.get_by_test_id("plan-simulation").get_by_role("button", name="Simulate").click()
    expect(page.get_by_test_id("simulation-status")).to_have_attribute("data-state", "waiting")
    page.get_by_role("button", name="Cancel the simulation").click()
    expect(page.get_by_test_id("simulation-status")).to_have_attribute("data-state", "cancelled")
    expect(page.get_by_test_id("simulation-cancelled")).to_contain_text("cancelled")
    expect(page.get_by_role("button", name="Cancel the simulation")).to_have_count(0)
    assert_accessible(page, "a cancelled simulation")
    assert PlanningSimulation.objects.get(study=built.study).outcome == "cancelled"
