"""The Delphi part of the demo: the demo clinicians as a panel on the MedHELM taxonomy.

Round 1 is answered (simulated, fixed seed), analysed, its suggestions triaged and its
feedback released; round 2 is open, so a demo clinician who logs in answers it in the
browser with the panel's round-1 feedback beside each item. Idempotent.

Runs after annotation's demo loader (it reuses the demo accounts); the panel is pseudonymous,
so the demo coordinator sees e-mails and pseudonyms, and the clinicians see neither.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from delphi import services
from delphi.models import DelphiStudy, Panelist, Round

DEMO_DELPHI_TITLE = "Demo: consensus on the MedHELM taxonomy"
DEMO_SEED = 1979
COORDINATOR = "coordinator"
PANEL = ("clinician1", "clinician2", "clinician3", "clinician4")
DEMO_BASE_URL = "http://127.0.0.1:8000"
# Subcategories the simulated panel finds less central (mean rating 5 instead of 8), so that
# round 1 ends with some items without consensus to carry into round 2.
CONTESTED = (
    "Recording Research Processes",
    "Overseeing Financial Activities",
    "Managing Research Enrollment",
    "Recording Procedures",
)


@transaction.atomic
def load_demo_delphi() -> DelphiStudy | None:
    """The demo study, created on first call; None while the demo accounts do not exist."""
    User = get_user_model()
    existing = DelphiStudy.objects.filter(title=DEMO_DELPHI_TITLE).first()
    if existing is not None:
        return existing
    coordinator = User.objects.filter(username=COORDINATOR).first()
    panel_users = list(User.objects.filter(username__in=PANEL).order_by("username"))
    if coordinator is None or len(panel_users) != len(PANEL):
        return None  # annotation's demo loader makes the accounts; nothing to attach to yet
    study = _create_study(coordinator)
    panelists = [_join(study, coordinator, user) for user in panel_users]
    services.lock_protocol(study=study, actor=coordinator)
    first = study.rounds.get(number=1)
    services.open_round(round_=first, actor=coordinator, base_url=DEMO_BASE_URL)
    target = first.items.get(name="Recording Procedures")
    services.add_suggestion(
        panelist=panelists[0],
        round_=first,
        kind="rename",
        target_identity=target.identity,
        details={"name": "Documenting Procedures"},
        text="Matches the wording of the other note-generation subcategories.",
    )
    _answer(first, panelists)
    services.close_round(round_=first, actor=coordinator)
    services.analyse_round(round_=first, actor=coordinator)
    for suggestion in first.suggestions.all():
        services.triage_suggestion(
            suggestion=suggestion,
            actor=coordinator,
            accept=True,
            reason="Consistent wording across the category.",
        )
    services.release_feedback(round_=first, actor=coordinator)
    second: Round = services.start_next_round(study=study, actor=coordinator)
    services.open_round(round_=second, actor=coordinator, base_url=DEMO_BASE_URL)
    study.refresh_from_db()
    return study


def _create_study(coordinator: AbstractBaseUser) -> DelphiStudy:
    return services.create_delphi_study(
        title=DEMO_DELPHI_TITLE,
        aims=(
            "Agree, with a panel of clinicians, which categories and subcategories of medical "
            "tasks a benchmark of medical language models must cover."
        ),
        draft_taxonomy=services.ensure_medhelm_taxonomy(),
        created_by=coordinator,
        questions={"rate_kinds": ["category", "subcategory"], "placement": "agree"},
        consensus_rule={"preset": "comet_70_15", "min_n": 3},
        stopping_rule={"max_rounds": 3, "all_resolved": True},
        ask_reason_outside_iqr=True,
    )


def _join(study: DelphiStudy, coordinator: AbstractBaseUser, user: Any) -> Panelist:
    _panelist, token = services.invite_panelist(
        study=study,
        actor=coordinator,
        email=user.email or f"{user.username}@demo.invalid",
        base_url=DEMO_BASE_URL,
        stakeholder_group="clinician",
        specialty="internal medicine",
    )
    return services.accept_invitation(token=token, user=user)


def _answer(round_: Round, panelists: list[Panelist]) -> None:
    """Simulated ratings around 8 (5 for the contested items), with a fixed seed."""
    rng = np.random.default_rng(DEMO_SEED)
    for index, panelist in enumerate(panelists):
        answers = {}
        for item in round_.items.all():
            centre = 5 if item.name in CONTESTED else 8
            rating = int(np.clip(round(centre + rng.normal(0, 1.2)), 1, 9))
            answer = {"rating": rating, "placement_agrees": True}
            if item.kind == "category":
                answer.pop("placement_agrees")
            if item.name in CONTESTED and index % 2 == 0:
                answer["comment"] = (
                    "Overlaps with other subcategories."
                    if index == 0
                    else "Important for research sites, less so for care."
                )
            answers[str(item.pk)] = answer
        services.submit_round(
            panelist=panelist, round_=round_, answers=answers, comprehensiveness=4
        )
