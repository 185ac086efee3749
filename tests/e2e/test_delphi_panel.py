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
from dataclasses import dataclass

import pytest
from django.urls import reverse
from playwright.sync_api import Locator, Page, Route, expect

from delphi import services
from delphi.models import Panelist, PanelistRound, Response, Round, RoundItem
from tests.delphi.flow import BASE_URL, PanelStudy, answer_all, make_panel_study
from tests.support.browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def built(transactional_db) -> PanelStudy:
    study = make_panel_study(n_panelists=3, carry_over="rerate_all", ask_reason_outside_iqr=True)
    services.open_round(round_=study.round(1), actor=study.coordinator, base_url=BASE_URL)
    return study


def round_url(live_server, built: PanelStudy) -> str:
    return live_server.url + reverse("delphi:panel_round", kwargs={"study_id": built.study.pk})


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


@dataclass
class Questionnaire:
    """One panelist's questionnaire page in round 1, with what the steps check against."""

    page: Page
    panelist: Panelist
    round1: Round
    items: dict[str, RoundItem]
    storage_key: str

    @property
    def save_state(self) -> Locator:
        return self.page.locator("#save-state")

    def saved(self) -> dict[str, int | None]:
        return saved(self.panelist.pk, self.round1)

    def stored(self) -> object:
        """The draft kept in the browser's localStorage (None when there is none)."""
        return self.page.evaluate("k => JSON.parse(localStorage.getItem(k))", self.storage_key)

    def comment(self, name: str) -> Locator:
        return self.page.locator(f"textarea[name='item-{self.items[name].pk}-comment']")


def half_way_answers_are_autosaved(q: Questionnaire) -> None:
    """Two items rated, one placement answered, all autosaved; a reload renders them."""
    rating(q.page, q.items["Clinical Decision Support"], 8).check()
    rating(q.page, q.items["Diagnosis"], 7).check()
    q.page.check(f"input[name='item-{q.items['Diagnosis'].pk}-placement_agrees'][value='yes']")
    wait_until(
        q.page,
        lambda: q.saved() == {"Clinical Decision Support": 8, "Diagnosis": 7},
        "the first answers are autosaved",
    )
    expect(q.save_state).to_have_text(re.compile(r"^Draft saved"))
    diagnosis = Response.objects.get(round_item=q.items["Diagnosis"], panelist=q.panelist)
    assert diagnosis.placement_agrees
    assert q.stored() is None
    q.page.reload()
    expect(rating(q.page, q.items["Clinical Decision Support"], 8)).to_be_checked()
    expect(rating(q.page, q.items["Diagnosis"], 7)).to_be_checked()


def answers_stay_in_the_browser_while_the_endpoint_fails(
    q: Questionnaire, monkeypatch: pytest.MonkeyPatch
) -> None:
    """page.route fails what the page sends. The last-gasp save a page sends while it unloads
    (keepalive) leaves from the browser process, past Playwright's routing, so the server
    refuses too, as a server that is down would."""
    blocked: list[str] = []

    def fail(route: Route) -> None:
        blocked.append(route.request.post_data or "")
        route.abort()

    def outage(**kwargs: object) -> None:
        raise services.DelphiError("the server is unavailable (simulated)")

    q.page.context.route("**/round/draft/", fail)
    monkeypatch.setattr(services, "save_answers", outage)
    rating(q.page, q.items["Treatment"], 3).check()
    q.comment("Treatment").fill("Too close to diagnosis")
    expect(q.save_state).to_have_text(re.compile(r"^Offline"))
    assert blocked, "the browser tried to save"
    assert q.stored()["state"]["answers"][str(q.items["Treatment"].pk)]["rating"] == 3
    assert "Treatment" not in q.saved()


def a_reload_restores_them_from_the_browser(q: Questionnaire) -> None:
    """The endpoint still fails: the server does not have the answers, the browser does."""
    response = q.page.reload()
    treatment = q.items["Treatment"].pk
    assert not re.search(rf"name=\"item-{treatment}-rating\" value=\"\d\" checked", response.text())
    expect(rating(q.page, q.items["Treatment"], 3)).to_be_checked()
    expect(q.comment("Treatment")).to_have_value("Too close to diagnosis")
    expect(rating(q.page, q.items["Diagnosis"], 7)).to_be_checked()
    expect(q.save_state).to_have_text(re.compile(r"^(Restored|Offline)"))
    assert "Treatment" not in q.saved()


def the_retry_reaches_the_server(q: Questionnaire, monkeypatch: pytest.MonkeyPatch) -> None:
    q.page.context.unroute("**/round/draft/")
    monkeypatch.undo()
    wait_until(
        q.page,
        lambda: q.saved().get("Treatment") == 3,
        "the restored answer reaches the server",
        timeout=15,
    )
    treatment = Response.objects.get(round_item=q.items["Treatment"], panelist=q.panelist)
    assert treatment.comment == "Too close to diagnosis"
    expect(q.save_state).to_have_text(re.compile(r"^Draft saved"))
    assert q.stored() is None


def unable_to_rate_and_a_rating_exclude_each_other(q: Questionnaire) -> None:
    unable = f"input[name='item-{q.items['Billing'].pk}-unable']"
    q.page.check(unable)
    rating(q.page, q.items["Billing"], 5).check()
    expect(q.page.locator(unable)).not_to_be_checked()
    q.page.check(unable)
    expect(rating(q.page, q.items["Billing"], 5)).not_to_be_checked()


def submit_after_a_missing_answer_is_listed(q: Questionnaire) -> None:
    for name, value in (("Administration", 6), ("Scheduling", 8)):
        rating(q.page, q.items[name], value).check()
    q.page.click("#submit-round")
    expect(q.page.locator("#errors")).to_contain_text("say whether it belongs under its parent")
    for name in ("Treatment", "Scheduling", "Billing"):
        q.page.check(f"input[name='item-{q.items[name].pk}-placement_agrees'][value='yes']")
    q.page.check("input[name='comprehensiveness'][value='4']")
    q.page.click("#submit-round")
    expect(q.page.get_by_role("heading", name="Thank you")).to_be_visible()
    entry = PanelistRound.objects.get(panelist=q.panelist, round=q.round1)
    assert entry.status == PanelistRound.Status.SUBMITTED
    assert entry.comprehensiveness == 4
    assert q.saved() == {
        "Clinical Decision Support": 8,
        "Diagnosis": 7,
        "Treatment": 3,
        "Administration": 6,
        "Scheduling": 8,
        "Billing": None,
    }
    assert Response.objects.get(round_item=q.items["Billing"], panelist=q.panelist).unable_to_rate
    assert q.stored() is None


def test_draft_survives_reloads_and_a_failing_draft_endpoint_then_submits(
    live_server, page: Page, built: PanelStudy, monkeypatch: pytest.MonkeyPatch
):
    panelist = built.panelists[0]
    round1 = built.round(1)
    log_in(page, live_server, panelist.user.username, via=round_url(live_server, built))
    q = Questionnaire(
        page=page,
        panelist=panelist,
        round1=round1,
        items={item.name: item for item in round1.items.all()},
        storage_key=f"delphi-draft-{built.study.pk}-1-{panelist.pk}",
    )
    half_way_answers_are_autosaved(q)
    answers_stay_in_the_browser_while_the_endpoint_fails(q, monkeypatch)
    a_reload_restores_them_from_the_browser(q)
    the_retry_reaches_the_server(q, monkeypatch)
    unable_to_rate_and_a_rating_exclude_each_other(q)
    submit_after_a_missing_answer_is_listed(q)


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
    log_in(page, live_server, panelist.user.username, via=round_url(live_server, built))

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
