"""A whole study through the coordinator's pages: created with an uploaded draft, protocol
set, panel invited and joined, locked, two rounds run (with a triaged suggestion between
them), finished and released. Each stage is a named step; the test reads as the story."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core import mail

from delphi import services
from delphi.models import DelphiStudy, Panelist, Round, Suggestion, TaxonomyVersion
from tests.delphi.coordinator.pages import (
    messages_of,
    post,
    protocol_post,
    staff_user,
    taxonomy_upload,
)
from tests.delphi.flow import PanelStudy, answer_all
from tests.factories import UserFactory


def create_with_an_uploaded_draft(client: Any, coordinator: Any) -> DelphiStudy:
    response = client.post(
        "/delphi/new/",
        {
            "title": "Consensus on a small taxonomy",
            "aims": "Agree which subcategories belong.",
            "taxonomy_source": "upload",
            "taxonomy_file": taxonomy_upload(),
        },
    )
    study = DelphiStudy.objects.get(title="Consensus on a small taxonomy")
    assert response.status_code == 302 and response["Location"] == f"/delphi/{study.pk}/"
    assert study.draft_taxonomy.name == "Small draft"
    assert study.draft_taxonomy.source == TaxonomyVersion.Source.IMPORT
    assert study.coordinators.filter(user=coordinator).exists()
    overview = client.get(f"/delphi/{study.pk}/")
    assert messages_of(overview) == [
        "Delphi study created. Set the protocol up and invite the panel next."
    ]
    return study


def set_the_protocol(client: Any, study: DelphiStudy) -> None:
    """Percent agreement 75% with at least 3 ratings; at most two rounds."""
    base = f"/delphi/{study.pk}"
    assert post(client, f"{base}/protocol/", protocol_post(study)) == ["Protocol saved."]
    study.refresh_from_db()
    assert study.consensus_rule == {"preset": "percent_agreement", "min_n": 3, "pct_at_least": 75}
    assert study.stopping_rule == {"max_rounds": 2, "all_resolved": True}
    assert study.questions["rate_kinds"] == ["subcategory"]
    page = client.get(f"{base}/protocol/").content.decode()
    assert "Percent agreement: consensus in when &gt;= 75% rate 7-9" in page


def invite_a_panel_that_joins(client: Any, study: DelphiStudy, capture: Any) -> list[Panelist]:
    """Seven panelists invited through the panel page (five clinicians, two nurses); each
    joins with the link from their e-mail."""
    base = f"/delphi/{study.pk}"
    panelists: list[Panelist] = []
    for i in range(7):
        with capture(execute=True):
            shown = post(
                client,
                f"{base}/panel/",
                {
                    "email": f"panelist{i}@example.org",
                    "stakeholder_group": "clinician" if i < 5 else "nurse",
                    "specialty": "internal medicine",
                },
            )
        assert shown == [
            f"panelist{i}@example.org invited as P0{i + 1}; the one-time link is on its way "
            "by e-mail."
        ]
        link = re.search(r"http://testserver/delphi/join/(\S+)/", mail.outbox[-1].body)
        assert link is not None, mail.outbox[-1].body
        user = UserFactory(username=f"panelist{i}")
        panelists.append(services.accept_invitation(token=link.group(1), user=user))
    panel_page = client.get(f"{base}/panel/").content.decode()
    assert "panelist6@example.org" in panel_page and "P07" in panel_page
    return panelists


def lock_the_protocol(client: Any, study: DelphiStudy) -> Round:
    """Refused without the confirmation, done with it; round 1 is drafted."""
    base = f"/delphi/{study.pk}"
    assert post(client, f"{base}/protocol/lock/") == [
        "Tick the box to confirm: locking cannot be undone."
    ]
    study.refresh_from_db()
    assert study.status == DelphiStudy.Status.SETUP
    shown = post(client, f"{base}/protocol/lock/", {"confirm": "yes"})
    study.refresh_from_db()
    assert study.status == DelphiStudy.Status.LOCKED and len(study.protocol_hash) == 64
    assert shown[0].startswith(f"Protocol locked (SHA-256 {study.protocol_hash[:12]}")
    round1 = study.rounds.get(number=1)
    assert list(round1.items.values_list("name", flat=True)) == [
        "Diagnosis",
        "Treatment",
        "Scheduling",
        "Billing",
    ]
    locked_page = client.get(f"{base}/protocol/").content.decode()
    assert study.protocol_hash in locked_page and 'data-testid="protocol-form"' not in locked_page
    return round1


def run_round_1(client: Any, built: PanelStudy, round1: Round) -> None:
    """Open with a closing date, remind, the panel answers (one suggests a rename first),
    close and analyse; the round page shows the outcomes and withholds small groups."""
    base = f"/delphi/{built.study.pk}"
    shown = post(client, f"{base}/rounds/1/open/", {"closes_at": "2030-01-31T17:00"})
    assert shown == ["Round 1 is open; joined panelists were told by e-mail."]
    round1.refresh_from_db()
    assert round1.status == Round.Status.OPEN and round1.closes_at.year == 2030
    assert post(client, f"{base}/rounds/1/remind/") == [
        "Reminders sent to 7 panelist(s) who have not submitted."
    ]
    services.add_suggestion(
        panelist=built.panelists[0],
        round_=round1,
        kind="rename",
        text="Clearer for clinicians.",
        target_identity=round1.items.get(name="Scheduling").identity,
        details={"name": "Appointment scheduling"},
    )
    answer_all(built, round1, {"Billing": [1, 5, 9, 5, 2, 8, 3]})
    assert post(client, f"{base}/rounds/1/close/") == [
        "Round 1 closed; who did not submit is a non-responder."
    ]
    assert post(client, f"{base}/rounds/1/analyse/") == [
        "Round 1 analysed under the locked consensus rule."
    ]
    text = client.get(f"{base}/rounds/1/").content.decode()
    assert "consensus in" in text and "no consensus" in text
    assert "withheld (&lt;5)" in text  # the two nurses
    assert "1 of 4 items of round 1 without consensus" in text
    assert "7 / 7 (100%)" in client.get(f"{base}/").content.decode()


def finishing_early_needs_a_reason(client: Any, study: DelphiStudy) -> None:
    shown = post(client, f"/delphi/{study.pk}/finish/", {"reason": ""})
    assert shown[0].startswith("The locked stopping rule is not met (round 1 of at most 2")
    study.refresh_from_db()
    assert study.status == DelphiStudy.Status.RUNNING


def triage_then_draft_round_2(client: Any, study: DelphiStudy) -> Round:
    """The next round waits for the feedback and for the suggestion's triage."""
    base = f"/delphi/{study.pk}"
    shown = post(client, f"{base}/rounds/next/")
    assert shown == ["Cannot build on round 1: it is analysed, not feedback released"]
    suggestion = Suggestion.objects.get()
    triage = f"{base}/rounds/1/suggestions/{suggestion.pk}/triage/"
    shown = post(client, triage, {"decision": "accept", "reason": ""})
    assert shown == ["Give the reason for accepting or rejecting the suggestion"]
    suggestion.refresh_from_db()
    assert suggestion.status == Suggestion.Status.PENDING
    shown = post(
        client, triage, {"decision": "accept", "reason": "The panel's wording is clearer."}
    )
    assert shown == ["Suggestion accepted."]
    assert post(client, f"{base}/rounds/1/feedback/") == [
        "The feedback of round 1 is visible to the panel."
    ]
    assert post(client, f"{base}/rounds/next/") == ["Round 2 drafted with 2 item(s); open it."]
    round2 = study.rounds.get(number=2)
    assert sorted(round2.items.values_list("name", "item_version")) == [
        ("Appointment scheduling", 2),
        ("Billing", 1),
    ]
    return round2


def run_round_2_and_finish(client: Any, built: PanelStudy, round2: Round) -> None:
    """Round 2 reaches consensus on both; the stopping rule is met, so no reason is needed."""
    base = f"/delphi/{built.study.pk}"
    post(client, f"{base}/rounds/2/open/", {"closes_at": ""})
    answer_all(built, round2, {})
    post(client, f"{base}/rounds/2/close/")
    post(client, f"{base}/rounds/2/analyse/")
    assert "Stopping rule met" in client.get(f"{base}/").content.decode()
    shown = post(client, f"{base}/finish/", {"reason": ""})
    assert shown[0].startswith("Study finished (stopping rule met:")
    built.study.refresh_from_db()
    assert built.study.status == DelphiStudy.Status.FINISHED


def release_the_taxonomy(client: Any, study: DelphiStudy) -> None:
    """A name is needed; then the consensus taxonomy is a new version."""
    base = f"/delphi/{study.pk}"
    assert post(client, f"{base}/release/", {"name": ""}) == [
        "Name: give the released taxonomy version a name"
    ]
    shown = post(client, f"{base}/release/", {"name": "Small taxonomy 2030"})
    assert shown == ["Released 'Small taxonomy 2030' with 6 node(s); 0 left out."]
    study.refresh_from_db()
    assert study.status == DelphiStudy.Status.RELEASED
    released = study.released_taxonomy
    assert released.name == "Small taxonomy 2030"
    assert released.nodes.filter(name="Appointment scheduling").exists()
    assert 'data-testid="released"' in client.get(f"{base}/").content.decode()


@pytest.mark.django_db
def test_a_study_runs_from_setup_to_release_through_the_pages(
    client, django_capture_on_commit_callbacks
):
    coordinator = staff_user()
    client.force_login(coordinator)
    study = create_with_an_uploaded_draft(client, coordinator)
    set_the_protocol(client, study)
    panelists = invite_a_panel_that_joins(client, study, django_capture_on_commit_callbacks)
    round1 = lock_the_protocol(client, study)
    built = PanelStudy(study=study, coordinator=coordinator, panelists=panelists)
    run_round_1(client, built, round1)
    finishing_early_needs_a_reason(client, study)
    round2 = triage_then_draft_round_2(client, study)
    run_round_2_and_finish(client, built, round2)
    release_the_taxonomy(client, study)
