"""Builders for Delphi tests: a locked study with a joined panel, driven through the services."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from delphi import services
from delphi.models import DelphiStudy, Panelist, Round, RoundItemStatistics
from tests.factories import UserFactory

SMALL_TAXONOMY = {
    "name": "Small draft",
    "categories": [
        {"name": "Clinical Decision Support", "subcategories": ["Diagnosis", "Treatment"]},
        {"name": "Administration", "subcategories": ["Scheduling", "Billing"]},
    ],
}
# Categories, subcategories and tasks, for suggestions that move, merge or delete down the tree.
THREE_LEVEL_TAXONOMY = {
    "name": "Three levels",
    "categories": [
        {
            "name": "Care",
            "subcategories": [
                {"name": "Diagnosis", "tasks": ["Differential", "Imaging"]},
                {"name": "Treatment", "tasks": ["Dosing"]},
            ],
        },
        {"name": "Admin", "subcategories": [{"name": "Billing", "tasks": ["Coding"]}]},
    ],
}
BASE_URL = "http://testserver"


@dataclass
class PanelStudy:
    study: DelphiStudy
    coordinator: Any
    panelists: list[Panelist] = field(default_factory=list)

    def round(self, number: int) -> Round:
        return self.study.rounds.get(number=number)


def make_panel_study(
    *,
    n_panelists: int = 6,
    groups: tuple[str, ...] = ("clinician",),
    taxonomy: dict[str, Any] | None = None,
    lock: bool = True,
    **protocol: Any,
) -> PanelStudy:
    coordinator = UserFactory(username="delphi-coordinator")
    version = services.create_taxonomy_version(tree=taxonomy or SMALL_TAXONOMY, source="import")
    study = services.create_delphi_study(
        title="Consensus on a small taxonomy",
        aims="Agree which tasks belong.",
        draft_taxonomy=version,
        created_by=coordinator,
        **protocol,
    )
    built = PanelStudy(study=study, coordinator=coordinator)
    for i in range(n_panelists):
        _panelist, token = services.invite_panelist(
            study=study,
            actor=coordinator,
            email=f"panelist{i}@example.org",
            base_url=BASE_URL,
            stakeholder_group=groups[i % len(groups)],
            specialty="internal medicine",
        )
        user = UserFactory(username=f"panelist{i}")
        built.panelists.append(services.accept_invitation(token=token, user=user))
    if lock:
        built.study = services.lock_protocol(study=study, actor=coordinator)
    return built


def answer_all(
    built: PanelStudy, round_: Round, ratings: dict[str, list[int | None]], **extra: Any
) -> None:
    """Each panelist i rates item named n with ratings[n][i] (None: unable to rate) and submits."""
    for i, panelist in enumerate(built.panelists):
        answers = {}
        for item in round_.items.all():
            value = ratings.get(item.name, [8] * len(built.panelists))[i]
            answer: dict[str, Any] = {"placement_agrees": True}
            if value is None:
                answer["unable"] = True
            else:
                answer["rating"] = value
            answer.update(extra)
            answers[str(item.pk)] = answer
        services.submit_round(
            panelist=panelist, round_=round_, answers=answers, comprehensiveness=4
        )


def run_round(built: PanelStudy, round_: Round, ratings: dict[str, list[int | None]]) -> Round:
    actor = built.coordinator
    services.open_round(round_=round_, actor=actor, base_url=BASE_URL)
    answer_all(built, round_, ratings)
    services.close_round(round_=round_, actor=actor)
    services.analyse_round(round_=round_, actor=actor)
    return services.release_feedback(round_=round_, actor=actor)


def submit_ratings(panelist: Panelist, round_: Round, ratings: dict[str, int | None]) -> None:
    """One panelist rates item named n with ratings[n] (8 when not given; None: unable to
    rate) and submits."""
    answers = {}
    for item in round_.items.all():
        value = ratings.get(item.name, 8)
        answers[str(item.pk)] = {"placement_agrees": True} | (
            {"unable": True} if value is None else {"rating": value}
        )
    services.submit_round(panelist=panelist, round_=round_, answers=answers, comprehensiveness=4)


def item_stats(round_: Round, name: str, group: str = "") -> RoundItemStatistics:
    """The stored statistics of the item named `name` (whole panel, or one group)."""
    return RoundItemStatistics.objects.get(
        round_item__round=round_, round_item__name=name, group=group
    )
