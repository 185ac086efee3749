"""The Delphi questionnaire in a real browser.

A panelist answers round 1, reloads half-way and finds the draft (from the server); then the
draft endpoint fails (blocked with page.route), they keep answering, reload, and the answers
are still there (from localStorage); once the endpoint answers again the restored answers
reach the server, and the panelist submits. In round 2 the reason field appears only for a
rating outside the panel's IQR.

Every check that matters reads the database (what the server kept), not only the page.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest
from django.urls import reverse
from playwright.sync_api import Page, Route, expect

from delphi import services
from delphi.models import PanelistRound, Response, Round, RoundItem
from tests.delphi.flow import BASE_URL, PanelStudy, answer_all, make_panel_study
from tests.factories import TEST_PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def built(transactional_db) -> PanelStudy:
    study = make_panel_study(n_panelists=3, carry_over="rerate_all", ask_reason_outside_iqr=True)
    services.open_round(round_=study.round(1), actor=study.coordinator, base_url=BASE_URL)
    return study


def round_url(live_server, built: PanelStudy) -> str:
    return live_server.url + reverse("delphi:panel_round", kwargs={"study_id": built.study.pk})


def log_in(page: Page, live_server, built: PanelStudy, username: str) -> None:
    """Through the real login form, coming back to the questionnaire (?next=)."""
    target = round_url(live_server, built)
    page.goto(target)
    page.wait_for_url(re.compile(r"/accounts/login/\?next="))
    page.fill("#id_username", username)
    page.fill("#id_password", TEST_PASSWORD)
    page.press("#id_password", "Enter")
    page.wait_for_url(target)


def wait_until(page: Page, predicate: Callable[[], object], what: str, timeout: float = 10) -> None:
    """Poll the database in the browser's time, so that Playwright keeps serving events."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        page.wait_for_timeout(100)


def rating(page: Page, item: RoundItem, value: int):
    return page.locator(f"input[name='item-{item.pk}-rating'][value='{value}']")


def saved(panelist_pk: int, round_: Round) -> dict[str, int | None]:
    return dict(
        Response.objects.filter(panelist_id=panelist_pk, round_item__round=round_).values_list(
            "round_item__name", "rating"
        )
    )


def test_draft_survives_reloads_and_a_failing_draft_endpoint_then_submits(
    live_server, page: Page, built: PanelStudy, monkeypatch: pytest.MonkeyPatch
):
    panelist = built.panelists[0]
    round1 = built.round(1)
    items = {item.name: item for item in round1.items.all()}
    storage_key = f"delphi-draft-{built.study.pk}-1-{panelist.pk}"
    log_in(page, live_server, built, panelist.user.username)
    save_state = page.locator("#save-state")

    # Half-way: two items rated, one placement answered, all autosaved.
    rating(page, items["Clinical Decision Support"], 8).check()
    rating(page, items["Diagnosis"], 7).check()
    page.check(f"input[name='item-{items['Diagnosis'].pk}-placement_agrees'][value='yes']")
    wait_until(
        page,
        lambda: saved(panelist.pk, round1) == {"Clinical Decision Support": 8, "Diagnosis": 7},
        "the first answers are autosaved",
    )
    expect(save_state).to_have_text(re.compile(r"^Draft saved"))
    assert Response.objects.get(round_item=items["Diagnosis"], panelist=panelist).placement_agrees
    assert page.evaluate("k => localStorage.getItem(k)", storage_key) is None

    # A reload: the server renders the draft.
    page.reload()
    expect(rating(page, items["Clinical Decision Support"], 8)).to_be_checked()
    expect(rating(page, items["Diagnosis"], 7)).to_be_checked()

    # The draft endpoint fails from now on; the next answers stay in the browser. page.route
    # fails what the page sends. The last-gasp save a page sends while it unloads (keepalive)
    # leaves from the browser process, past Playwright's routing, so the server refuses too,
    # as a server that is down would.
    blocked: list[str] = []
    refused: list[object] = []

    def fail(route: Route) -> None:
        blocked.append(route.request.post_data or "")
        route.abort()

    def outage(**kwargs: object) -> None:
        refused.append(kwargs)
        raise services.DelphiError("the server is unavailable (simulated)")

    page.context.route("**/round/draft/", fail)
    monkeypatch.setattr(services, "save_answers", outage)
    rating(page, items["Treatment"], 3).check()
    comment = page.locator(f"textarea[name='item-{items['Treatment'].pk}-comment']")
    comment.fill("Too close to diagnosis")
    expect(save_state).to_have_text(re.compile(r"^Offline"))
    assert blocked, "the browser tried to save"
    kept = page.evaluate("k => JSON.parse(localStorage.getItem(k))", storage_key)
    assert kept["state"]["answers"][str(items["Treatment"].pk)]["rating"] == 3
    assert "Treatment" not in saved(panelist.pk, round1)

    # Reload while the endpoint still fails: the server does not have it, the browser does.
    response = page.reload()
    assert not re.search(
        rf"name=\"item-{items['Treatment'].pk}-rating\" value=\"\d\" checked", response.text()
    )
    expect(rating(page, items["Treatment"], 3)).to_be_checked()
    expect(comment).to_have_value("Too close to diagnosis")
    expect(rating(page, items["Diagnosis"], 7)).to_be_checked()
    expect(save_state).to_have_text(re.compile(r"^(Restored|Offline)"))
    assert "Treatment" not in saved(panelist.pk, round1)

    # The endpoint answers again: the restored answers reach the server (the retry).
    page.context.unroute("**/round/draft/")
    monkeypatch.undo()
    wait_until(
        page,
        lambda: saved(panelist.pk, round1).get("Treatment") == 3,
        "the restored answer reaches the server",
        timeout=15,
    )
    treatment = Response.objects.get(round_item=items["Treatment"], panelist=panelist)
    assert treatment.comment == "Too close to diagnosis"
    expect(save_state).to_have_text(re.compile(r"^Draft saved"))
    assert page.evaluate("k => localStorage.getItem(k)", storage_key) is None

    # "Unable to rate" clears the rating (they exclude each other).
    page.check(f"input[name='item-{items['Billing'].pk}-unable']")
    rating(page, items["Billing"], 5).check()
    expect(page.locator(f"input[name='item-{items['Billing'].pk}-unable']")).not_to_be_checked()
    page.check(f"input[name='item-{items['Billing'].pk}-unable']")
    expect(rating(page, items["Billing"], 5)).not_to_be_checked()

    # The rest, then submit: a missing answer first is listed by name.
    for name, value in (("Administration", 6), ("Scheduling", 8)):
        rating(page, items[name], value).check()
    page.click("#submit-round")
    expect(page.locator("#errors")).to_contain_text("say whether it belongs under its parent")
    for name in ("Treatment", "Scheduling", "Billing"):
        page.check(f"input[name='item-{items[name].pk}-placement_agrees'][value='yes']")
    page.check("input[name='comprehensiveness'][value='4']")
    page.click("#submit-round")
    expect(page.get_by_role("heading", name="Thank you")).to_be_visible()
    entry = PanelistRound.objects.get(panelist=panelist, round=round1)
    assert entry.status == PanelistRound.Status.SUBMITTED
    assert entry.comprehensiveness == 4
    assert saved(panelist.pk, round1) == {
        "Clinical Decision Support": 8,
        "Diagnosis": 7,
        "Treatment": 3,
        "Administration": 6,
        "Scheduling": 8,
        "Billing": None,
    }
    assert Response.objects.get(round_item=items["Billing"], panelist=panelist).unable_to_rate
    assert page.evaluate("k => localStorage.getItem(k)", storage_key) is None


def test_round_two_feedback_and_the_reason_outside_the_iqr(
    live_server, page: Page, built: PanelStudy
):
    actor = built.coordinator
    round1 = built.round(1)
    answer_all(built, round1, {"Diagnosis": [4, 5, 6]})
    services.close_round(round_=round1, actor=actor)
    services.analyse_round(round_=round1, actor=actor)
    services.release_feedback(round_=round1, actor=actor)
    round2 = services.start_next_round(study=built.study, actor=actor)
    services.open_round(round_=round2, actor=actor, base_url=BASE_URL)
    diagnosis = round2.items.get(name="Diagnosis")
    panelist = built.panelists[0]
    log_in(page, live_server, built, panelist.user.username)

    section = page.locator(f"#item-{diagnosis.pk}")
    expect(section.locator("[data-testid=feedback] svg")).to_be_visible()
    expect(section.locator("[data-testid=own-answer]")).to_contain_text(
        "Your answer (only you see this): 4"
    )
    reason = section.locator("[data-reason]")
    expect(reason).to_be_hidden()  # JS hides it until a rating falls outside Q1-Q3 (4.5-5.5)
    rating(page, diagnosis, 5).check()
    expect(reason).to_be_hidden()
    rating(page, diagnosis, 8).check()
    expect(reason).to_be_visible()
    section.locator("textarea[name$='-reason']").fill("New evidence since round 1")
    wait_until(
        page,
        lambda: Response.objects.filter(
            round_item=diagnosis, panelist=panelist, reason_outside_iqr__startswith="New evidence"
        ).exists(),
        "the reason is autosaved",
    )
