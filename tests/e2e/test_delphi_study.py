"""A whole Delphi study in a real browser: three rounds, six panelists, ending in a released
taxonomy version that a rating study then files its items under.

Everything is done through the pages, as the coordinator and the panelists would: the study
is created with an uploaded draft, the protocol set and locked, the panel invited (each
panelist joins from the one-time link in their e-mail and makes an account), suggestions
triaged, feedback released, rounds carried over, the study finished and its taxonomy
released; then a rating study is created on the released version and a CSV of items
imported under its nodes. Checks read the database, not only the pages.

The ratings are chosen so that each round decides something under COMET 70/15 with six
panelists (5 of 6 = 83% rating 7-9 is consensus in; 4 of 6 = 67% is not):
  item          round 1               round 2                      round 3
  Diagnosis     all 8: in             (resolved, dropped)
  Treatment     all 2: out            (resolved, dropped)
  Scheduling    8,8,8,8,5,5: none     renamed (v2), all 8: in
  Billing       5,5,5,8,8,2: none     5,5,8,8,8,5: none            8,8,8,8,8,5: in
Round 3 reaches the maximum of three rounds with every item resolved: the rule is met.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission
from django.core import mail
from playwright.sync_api import Browser, Page, expect

from annotation.models import Item, RatingStudy
from delphi.models import (
    DelphiStudy,
    PanelistRound,
    Round,
    RoundItemStatistics,
    Suggestion,
    TaxonomyVersion,
)
from tests.factories import UserFactory
from tests.support.browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DRAFT = {
    "name": "Small draft",
    "categories": [
        {"name": "Clinical Decision Support", "subcategories": ["Diagnosis", "Treatment"]},
        {"name": "Administration", "subcategories": ["Scheduling", "Billing"]},
    ],
}
RATINGS = {
    1: {
        "Diagnosis": [8] * 6,
        "Treatment": [2] * 6,
        "Scheduling": [8, 8, 8, 8, 5, 5],
        "Billing": [5, 5, 5, 8, 8, 2],
    },
    2: {"Appointment scheduling": [8] * 6, "Billing": [5, 5, 8, 8, 8, 5]},
    3: {"Billing": [8, 8, 8, 8, 8, 5]},
}
N_PANELISTS = 6


def click_and_wait(page: Page, button_name: str) -> None:
    with page.expect_navigation():
        page.get_by_role("button", name=button_name).click()


def answer_round(page: Page, study: DelphiStudy, number: int, index: int) -> None:
    """Panelist `index` answers round `number` on the questionnaire and submits it."""
    round_ = study.rounds.get(number=number)
    page.goto(f"{page.url.split('/delphi/')[0]}/delphi/{study.pk}/round/")
    expect(page.locator("h1")).to_contain_text(f"round {number}")
    for item in round_.items.all():
        value = RATINGS[number][item.name][index]
        page.check(f"input[name='item-{item.pk}-rating'][value='{value}']")
        page.check(f"input[name='item-{item.pk}-placement_agrees'][value='yes']")
        if number == 1 and index == 0 and item.name == "Billing":
            page.fill(f"textarea[name='item-{item.pk}-comment']", "Billing is admin, not care.")
    page.check("input[name='comprehensiveness'][value='4']")
    click_and_wait(page, f"Submit round {number}")
    expect(page.locator("main")).to_contain_text("Thank you")


@dataclass
class StudyRun:
    """The coordinator's page, the live server's URL, the study and each panelist's page."""

    lead: Page
    url: str
    study: DelphiStudy | None = None
    panel: list[Page] = field(default_factory=list)

    @property
    def base(self) -> str:
        return f"{self.url}/delphi/{self.study.pk}"

    def step(self, *buttons: str) -> None:
        """Press each button of the study's overview page in turn; none may show an error."""
        for button in buttons:
            self.lead.goto(self.base + "/")
            click_and_wait(self.lead, button)
            expect(self.lead.locator(".messages .error")).to_have_count(0)

    def panel_answers(self, number: int) -> None:
        for index, page in enumerate(self.panel):
            answer_round(page, self.study, number, index)


# --------------------------------------------------------------------------- steps


def create_with_an_uploaded_draft(run: StudyRun, tmp_path: Path) -> None:
    draft_file = tmp_path / "draft.json"
    draft_file.write_text(json.dumps(DRAFT), encoding="utf-8")
    lead = run.lead
    lead.goto(run.url + "/delphi/new/")
    lead.fill("input[name='title']", "Which tasks belong in our benchmark?")
    lead.fill("textarea[name='aims']", "Agree the subcategories of a local benchmark.")
    lead.check("input[name='taxonomy_source'][value='upload']")
    lead.set_input_files("input[name='taxonomy_file']", str(draft_file))
    click_and_wait(lead, "Create Delphi study")
    run.study = DelphiStudy.objects.get(title="Which tasks belong in our benchmark?")
    assert run.study.draft_taxonomy.name == "Small draft"


def set_the_protocol(run: StudyRun) -> None:
    """Subcategories rated, placement asked, COMET 70/15, at most three rounds."""
    lead = run.lead
    lead.goto(run.base + "/protocol/")
    lead.uncheck("input[name='rate_kinds'][value='category']")
    lead.uncheck("input[name='rate_kinds'][value='task']")
    lead.check("input[name='placement'][value='agree']")
    lead.select_option("select[name='rule_preset']", "comet_70_15")
    lead.check("input[name='carry_over'][value='drop_resolved']")
    lead.fill("input[name='max_rounds']", "3")
    lead.check("input[name='all_resolved']")
    click_and_wait(lead, "Save protocol")
    run.study.refresh_from_db()
    assert run.study.questions["rate_kinds"] == ["subcategory"]
    assert run.study.stopping_rule == {"max_rounds": 3, "all_resolved": True}


def invite_the_panel(run: StudyRun, browser: Browser) -> None:
    """Six invitations; each panelist joins from the link in their e-mail with a new account."""
    for i in range(N_PANELISTS):
        run.lead.goto(run.base + "/panel/")
        run.lead.fill("input[name='email']", f"clinician{i}@hospital.example")
        run.lead.fill("input[name='stakeholder_group']", "physician" if i < 4 else "nurse")
        run.lead.fill("input[name='specialty']", "internal medicine")
        click_and_wait(run.lead, "Invite")
    assert len(mail.outbox) == N_PANELISTS
    for i, message in enumerate(mail.outbox):
        link = re.search(r"(http://\S+/delphi/join/\S+/)", message.body)
        assert link and message.to == [f"clinician{i}@hospital.example"], message.body
        page = browser.new_context().new_page()
        page.set_default_timeout(20_000)
        # The link is addressed to the site's own URL; follow its path on the live server.
        page.goto(run.url + "/delphi/join/" + link.group(1).split("/delphi/join/")[1])
        page.fill("#id_username", f"panelist{i}")
        page.fill("#id_password1", "a-Long-enough-passw0rd")
        page.fill("#id_password2", "a-Long-enough-passw0rd")
        click_and_wait(page, "Create account and join")
        run.panel.append(page)
    assert run.study.panelists.filter(user__isnull=False).count() == N_PANELISTS
    assert not run.study.panelists.exclude(invite_token_hash="").exists()  # links are spent


def lock_the_protocol(run: StudyRun) -> None:
    """Locking drafts round 1 from the taxonomy."""
    run.lead.goto(run.base + "/protocol/")
    run.lead.check("input[name='confirm']")
    click_and_wait(run.lead, "Lock protocol")
    run.study.refresh_from_db()
    assert run.study.status == DelphiStudy.Status.LOCKED and len(run.study.protocol_hash) == 64
    expect(run.lead.locator("main")).to_contain_text(run.study.protocol_hash)


def run_round_1_with_a_suggestion(run: StudyRun) -> None:
    """Round 1 collects suggestions: the first panelist suggests a rename; all answer."""
    run.step("Open round 1")
    first = run.panel[0]
    first.goto(run.base + "/round/")
    round1 = run.study.rounds.get(number=1)
    scheduling = round1.items.get(name="Scheduling")
    first.select_option("select[name='kind']", "rename")
    first.select_option("select[name='target']", str(scheduling.identity))
    first.fill("input[name='name']", "Appointment scheduling")
    first.fill("textarea[name='text']", "Scheduling alone is ambiguous (staff or patients?).")
    click_and_wait(first, "Add suggestion")
    assert Suggestion.objects.filter(round=round1, kind="rename").count() == 1
    run.panel_answers(1)
    run.step("Close round 1", "Analyse round 1")


def round_1_outcomes_are_as_rated(run: StudyRun) -> None:
    round1 = run.study.rounds.get(number=1)
    outcomes = dict(
        RoundItemStatistics.objects.filter(round_item__round=round1, group="").values_list(
            "round_item__name", "outcome"
        )
    )
    assert outcomes == {
        "Diagnosis": "consensus_in",
        "Treatment": "consensus_out",
        "Scheduling": "no_consensus",
        "Billing": "no_consensus",
    }
    # The nurses (2) are fewer than 5: their group statistics are withheld.
    assert set(
        RoundItemStatistics.objects.filter(round_item__round=round1, group="nurse").values_list(
            "outcome", flat=True
        )
    ) == {"withheld"}


def accept_the_suggestion_and_open_round_2(run: StudyRun) -> None:
    run.lead.goto(run.base + "/rounds/1/")
    run.lead.check("input[name='decision'][value='accept']")
    run.lead.fill("textarea[name='reason']", "Clearer; the panel's wording.")
    click_and_wait(run.lead, "Decide")
    run.step("Release the feedback of round 1", "Start round 2", "Open round 2")
    round2 = run.study.rounds.get(number=2)
    assert sorted(round2.items.values_list("name", "item_version")) == [
        ("Appointment scheduling", 2),
        ("Billing", 1),
    ]


def round_2_shows_feedback_and_what_changed(run: StudyRun) -> None:
    """Feedback beside each item, the anonymous comment, the renamed item; no one else's
    identity on the page."""
    second = run.panel[1]
    second.goto(run.base + "/round/")
    billing = run.study.rounds.get(number=2).items.get(name="Billing")
    feedback = second.locator(f"#item-{billing.pk}")
    expect(feedback.locator("svg")).to_have_count(1)
    expect(feedback).to_contain_text("Billing is admin, not care.")  # anonymous comment
    expect(feedback).to_contain_text("only you see this")
    expect(second.locator("[data-testid='changed']")).to_contain_text("Scheduling")
    page_text = second.content()
    for other in ("panelist0", "panelist2", "clinician0@", "P01", "P03"):
        assert other not in page_text, f"{other} leaked to panelist1's page"


def run_round_3_to_the_stopping_rule(run: StudyRun) -> None:
    """Only Billing is left; the stopping rule is met after round 3; the study finishes."""
    round3 = run.study.rounds.get(number=3)
    assert list(round3.items.values_list("name", flat=True)) == ["Billing"]
    run.panel_answers(3)
    run.step("Close round 3", "Analyse round 3")
    round3.refresh_from_db()
    assert round3.stopping_decision["stop"] is True
    assert set(round3.stopping_decision["criteria_met"]) == {"max_rounds", "all_resolved"}
    assert (
        PanelistRound.objects.filter(round__study=run.study, status="submitted").count()
        == 3 * N_PANELISTS
    )
    run.step("Finish the study")


def release_the_taxonomy(run: StudyRun) -> TaxonomyVersion:
    run.lead.goto(run.base + "/")
    run.lead.fill("#release-name", "Local benchmark taxonomy 2026")
    click_and_wait(run.lead, "Release the taxonomy")
    run.study.refresh_from_db()
    assert run.study.status == DelphiStudy.Status.RELEASED
    released = run.study.released_taxonomy
    assert released.source == TaxonomyVersion.Source.DELPHI
    tree = {
        node.name: (node.kind, node.parent.name if node.parent else None)
        for node in released.nodes.select_related("parent")
    }
    assert tree == {
        "Clinical Decision Support": ("category", None),
        "Diagnosis": ("subcategory", "Clinical Decision Support"),
        "Administration": ("category", None),
        "Appointment scheduling": ("subcategory", "Administration"),
        "Billing": ("subcategory", "Administration"),
    }
    billing_node = released.nodes.get(name="Billing")
    assert [step["outcome"] for step in billing_node.history] == [
        "no_consensus",
        "no_consensus",
        "consensus_in",
    ]
    assert all(r.status == Round.Status.ANALYSED for r in run.study.rounds.filter(number=3))
    return released


def file_rating_items_under(run: StudyRun, released: TaxonomyVersion, tmp_path: Path) -> None:
    """A rating study on the released version; its imported items land under its nodes."""
    lead = run.lead
    lead.goto(run.url + "/studies/new/")
    lead.fill("input[name='name']", "Ratings under the consensus taxonomy")
    lead.select_option("select[name='taxonomy_version']", label=released.name)
    with lead.expect_navigation():
        lead.locator("form button[type='submit']").last.click()
    rating_study = RatingStudy.objects.get(name="Ratings under the consensus taxonomy")
    assert rating_study.taxonomy_version == released
    items_csv = tmp_path / "items.csv"
    items_csv.write_text(
        "external_id,input,output,model,reference,task\n"
        "c1,Chest pain at rest?,Consider ACS.,model-a,Rule out ACS.,Diagnosis\n"
        "c2,Book a follow-up,Booked for Monday.,model-a,Book within a week.,"
        "Appointment scheduling\n",
        encoding="utf-8",
    )
    lead.goto(f"{run.url}/studies/{rating_study.pk}/import/")
    lead.select_option("select[name='file_format']", "csv")
    lead.set_input_files("input[name='file']", str(items_csv))
    with lead.expect_navigation():
        lead.locator("form.card button[type='submit']").click()
    filed = dict(
        Item.objects.filter(study=rating_study).values_list("external_id", "taxonomy_node__name")
    )
    assert filed == {"c1": "Diagnosis", "c2": "Appointment scheduling"}
    assert set(
        Item.objects.filter(study=rating_study).values_list("taxonomy_node__version", flat=True)
    ) == {released.pk}


# --------------------------------------------------------------------------- the story


def test_three_rounds_six_panelists_to_a_released_taxonomy_used_by_a_rating_study(
    live_server, browser: Browser, tmp_path
):
    coordinator = UserFactory(username="delphi-lead")
    coordinator.user_permissions.add(
        Permission.objects.get(codename="add_delphistudy"),
        Permission.objects.get(codename="add_ratingstudy"),
    )
    lead = browser.new_context().new_page()
    lead.set_default_timeout(20_000)
    log_in(lead, live_server, "delphi-lead")
    run = StudyRun(lead=lead, url=live_server.url)

    create_with_an_uploaded_draft(run, tmp_path)
    set_the_protocol(run)
    invite_the_panel(run, browser)
    lock_the_protocol(run)
    run_round_1_with_a_suggestion(run)
    round_1_outcomes_are_as_rated(run)
    accept_the_suggestion_and_open_round_2(run)
    round_2_shows_feedback_and_what_changed(run)
    run.panel_answers(2)
    run.step(
        "Close round 2",
        "Analyse round 2",
        "Release the feedback of round 2",
        "Start round 3",
        "Open round 3",
    )
    run_round_3_to_the_stopping_rule(run)
    released = release_the_taxonomy(run)
    file_rating_items_under(run, released, tmp_path)
