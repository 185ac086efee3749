"""The prompt's context on the rating page: collapsed at first, opened and closed from the
keyboard (Enter on its summary does not submit the rating), exposed to a screen reader as an
expandable control, free of the model's name; axe finds no serious violation with it open,
and the page's CSP reports nothing.

Two HELM runs: the sample run in the repository (its instructions only), and a real run of
crfm-helm's simple1 (instructions and five in-context examples before each input; skipped
without `make helm`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotation import imports, services
from annotation.imports import pack_helm_run
from annotation.models import Assignment, Item, StudyMembership
from tests.annotation.imports.factories import HELM_MODEL, HELM_RUN
from tests.factories import MEDHELM_CRITERIA, UserFactory
from tests.support.axe import assert_accessible
from tests.support.helm_runs import MODEL, make_helm_suite
from tests.support.rating_page import log_in, rate_url

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RATER = "dr-context-rater"
SIMPLE1 = "simple1:model=simple_model1"


def rated_run(run: Path) -> Assignment:
    """The run imported into a new study and dealt to RATER; RATER's first assignment."""
    coordinator = UserFactory()
    study = services.create_study(
        name="Context study",
        created_by=coordinator,
        criteria=MEDHELM_CRITERIA,
        ratings_per_item=1,
    )
    services.add_member(
        study=study,
        user=UserFactory(username=RATER),
        role=StudyMembership.Role.CLINICIAN,
        actor=coordinator,
    )
    job = imports.start_import(
        study=study,
        uploaded_name=f"{run.name}.zip",
        content=pack_helm_run(run),
        file_format="helm",
        actor=coordinator,
    )
    assert job.status == "succeeded", job.errors
    services.assign_items(study=study, actor=coordinator, seed=3)
    return Assignment.objects.filter(study=study, clinician__username=RATER).first()


def summary_role(page) -> tuple[str, bool | None]:
    """The context summary's role and expanded state in Chromium's accessibility tree (what
    a screen reader reads), through the DevTools protocol."""
    cdp = page.context.new_cdp_session(page)
    root = cdp.send("DOM.getDocument")["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": "#text-context > summary"})
    [ax] = cdp.send("Accessibility.getPartialAXTree", {"nodeId": node["nodeId"]})["nodes"][:1]
    expanded = {p["name"]: p["value"]["value"] for p in ax.get("properties", [])}.get("expanded")
    cdp.detach()
    return ax["role"]["value"], expanded


def check_context(page, live_server, assignment: Assignment, model: str, shot: str) -> str:
    """Drive the context section of the assignment's page; the text it showed."""
    csp_reports = []
    page.on("console", lambda m: "Content Security Policy" in m.text and csp_reports.append(m))
    page.goto(rate_url(live_server, assignment))
    details = page.get_by_test_id("context")
    summary = details.locator("summary")
    expect(summary).to_contain_text("Context shown to the model before the input")
    expect(page.get_by_test_id("context-text")).to_be_hidden()  # collapsed at first
    # What a screen reader is told: the summary is an expandable control, now collapsed.
    assert summary_role(page) == ("DisclosureTriangle", False)

    summary.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("context-text")).to_be_visible()
    assert summary_role(page) == ("DisclosureTriangle", True)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.PENDING  # Enter opened it, did not submit
    shown = page.get_by_test_id("context-text").inner_text()
    html = page.content().lower()
    names = {model, model.replace("/", "_"), *model.split("/")}
    assert [name for name in names if len(name) >= 4 and name.lower() in html] == []
    page.screenshot(path=f"/tmp/i20-context-{shot}.png", full_page=True)
    assert_accessible(page, "the rating page with the prompt's context open")
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("context-text")).to_be_hidden()
    assert csp_reports == []
    return shown


def test_the_sample_runs_instructions_open_from_the_keyboard(live_server, new_context):
    assignment = rated_run(HELM_RUN)
    page = log_in(new_context(), live_server, RATER)
    shown = check_context(page, live_server, assignment, HELM_MODEL, "sample")
    assert shown == assignment.item.metadata[Item.PROMPT_CONTEXT_KEY]
    assert shown == "Answer the following consumer health question."


def test_a_real_runs_in_context_examples_open_from_the_keyboard(live_server, new_context, tmp_path):
    suite = make_helm_suite(tmp_path, (f"simple1:model={MODEL}",), suite_name="ctx")
    assignment = rated_run(suite / SIMPLE1)
    page = log_in(new_context(), live_server, RATER)
    shown = check_context(page, live_server, assignment, MODEL, "simple1")
    context = assignment.item.metadata[Item.PROMPT_CONTEXT_KEY]
    assert context.startswith("Please solve the following problem.")
    assert " ".join(shown.split()) == " ".join(context.split())
