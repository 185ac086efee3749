"""Helpers for the panel-page tests: clients, URLs, a no-JS form post, round 1 answered and
round 2 opened through the services, and the HTML of one item's section."""

from __future__ import annotations

import re
from typing import Any

from django.test import Client
from django.urls import reverse

from delphi import services
from delphi.models import Panelist, PanelistRound, Round, RoundItem
from tests.delphi.flow import BASE_URL, PanelStudy

# Round 1 answers per panelist (index = panelist): Diagnosis is spread (no consensus, so it is
# rated again and its feedback shows); the first panelist's 2 is theirs alone.
ROUND1 = {
    "Diagnosis": [2, 5, 8, 5, 4, 6],
    "Treatment": [8, 8, 9, 7, 8, 8],
}
DASH = "\u2013"  # the en dash of ranges on the page
COMMENTS = {0: "Too broad as worded", 3: "Overlaps with triage"}


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def round_url(built: PanelStudy) -> str:
    return reverse("delphi:panel_round", kwargs={"study_id": built.study.pk})


def draft_url(built: PanelStudy) -> str:
    return reverse("delphi:panel_draft", kwargs={"study_id": built.study.pk})


def suggest_url(built: PanelStudy) -> str:
    return reverse("delphi:panel_suggest", kwargs={"study_id": built.study.pk})


def item(round_: Round, name: str) -> RoundItem:
    return round_.items.get(name=name)


def invite(built: PanelStudy, email: str = "newcomer@example.org") -> tuple[Panelist, str]:
    return services.invite_panelist(
        study=built.study, actor=built.coordinator, email=email, base_url=BASE_URL
    )


def full_answers(round_: Round, rating: int = 8) -> dict[str, str]:
    """A complete no-JS form post for every item of the round."""
    data = {"comprehensiveness": "4"}
    for round_item in round_.items.all():
        data[f"item-{round_item.pk}-rating"] = str(rating)
        if round_item.kind != "category":
            data[f"item-{round_item.pk}-placement_agrees"] = "yes"
    return data


def answer_round1(built: PanelStudy) -> None:
    round_ = built.round(1)
    for i, panelist in enumerate(built.panelists):
        if panelist.rounds.filter(round=round_, status=PanelistRound.Status.SUBMITTED).exists():
            continue  # submitted through the page already
        answers = {}
        for round_item in round_.items.all():
            rating = ROUND1.get(round_item.name, [8] * 6)[i]
            answers[str(round_item.pk)] = {
                "rating": rating,
                "placement_agrees": True,
                "comment": COMMENTS.get(i, "") if round_item.name == "Diagnosis" else "",
            }
        services.submit_round(
            panelist=panelist, round_=round_, answers=answers, comprehensiveness=4
        )


def advance_to_round2(built: PanelStudy, *, release: bool = True) -> Round:
    """Round 1 answered, closed and analysed; with release, its feedback released and round 2
    drafted and opened."""
    actor = built.coordinator
    round1 = built.round(1)
    answer_round1(built)
    services.close_round(round_=round1, actor=actor)
    services.analyse_round(round_=round1, actor=actor)
    if not release:
        return round1
    services.release_feedback(round_=round1, actor=actor)
    round2 = services.start_next_round(study=built.study, actor=actor)
    return services.open_round(round_=round2, actor=actor, base_url=BASE_URL)


def section(html: str, item_pk: int) -> str:
    """The HTML of one item's section of the questionnaire."""
    match = re.search(
        rf'<section class="q-item[^"]*" id="item-{item_pk}".*?</section>', html, flags=re.S
    )
    assert match, f"no section for item {item_pk}"
    return match.group(0)


def feedback_of(html: str, item_pk: int) -> str:
    match = re.search(
        r'<div class="q-feedback" data-testid="feedback">.*?</details>|'
        r'<div class="q-feedback" data-testid="feedback">.*?data-testid="own-answer">.*?</p>',
        section(html, item_pk),
        flags=re.S,
    )
    assert match, "no feedback section"
    return match.group(0)
