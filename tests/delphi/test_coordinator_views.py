"""The coordinator's pages of a Delphi study, driven with the test client: set-up, lock, the
rounds, triage, finish and release, and the errors shown as messages or form errors."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile

from delphi import services
from delphi.models import (
    DelphiAuditEvent,
    DelphiStudy,
    Panelist,
    Round,
    Suggestion,
    TaxonomyVersion,
)
from tests.delphi.flow import SMALL_TAXONOMY, PanelStudy, answer_all, make_panel_study
from tests.factories import UserFactory


def staff_user(username: str = "delphi-staff") -> Any:
    user = UserFactory(username=username)
    user.user_permissions.add(Permission.objects.get(codename="add_delphistudy"))
    return user


def taxonomy_upload(tree: dict[str, Any] | None = None, name: str = "draft.json") -> Any:
    content = json.dumps(tree or SMALL_TAXONOMY).encode("utf-8")
    return SimpleUploadedFile(name, content, content_type="application/json")


def protocol_post(study: DelphiStudy, **changes: Any) -> dict[str, Any]:
    """The protocol form as a browser would post it, with `changes` on top."""
    data: dict[str, Any] = {
        "title": study.title,
        "aims": study.aims,
        "rate_kinds": ["subcategory"],
        "allow_unable_to_rate": "on",
        "placement": "agree",
        "comments": "on",
        "comprehensiveness": "on",
        "rule_preset": "percent_agreement",
        "pct_at_least": "75",
        "min_n": "3",
        "rule_json": "",
        "carry_over": "drop_resolved",
        "max_rounds": "2",
        "all_resolved": "on",
        "stability_pct": "",
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def messages_of(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def post(client: Any, url: str, data: dict[str, Any] | None = None) -> list[str]:
    """POST, follow the redirect, and return the messages shown on the page it lands on."""
    response = client.post(url, data or {}, follow=True)
    assert response.status_code == 200, response.content[:500]
    return messages_of(response)


# --------------------------------------------------------------------------- the whole flow


@pytest.mark.django_db
def test_a_study_runs_from_setup_to_release_through_the_pages(
    client, django_capture_on_commit_callbacks
):
    coordinator = staff_user()
    client.force_login(coordinator)

    # Create, with the draft taxonomy uploaded as JSON.
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
    base = f"/delphi/{study.pk}"
    overview = client.get(f"{base}/")
    assert messages_of(overview) == [
        "Delphi study created. Set the protocol up and invite the panel next."
    ]

    # Protocol: percent agreement 75% with at least 3 ratings; at most two rounds.
    shown = post(client, f"{base}/protocol/", protocol_post(study))
    assert shown == ["Protocol saved."]
    study.refresh_from_db()
    assert study.consensus_rule == {"preset": "percent_agreement", "min_n": 3, "pct_at_least": 75}
    assert study.stopping_rule == {"max_rounds": 2, "all_resolved": True}
    assert study.questions["rate_kinds"] == ["subcategory"]
    page = client.get(f"{base}/protocol/").content.decode()
    assert "Percent agreement: consensus in when &gt;= 75% rate 7-9" in page

    # Invite seven panelists through the panel page (five clinicians, two nurses); each
    # joins with the link from their e-mail.
    panelists: list[Panelist] = []
    for i in range(7):
        with django_capture_on_commit_callbacks(execute=True):
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

    # Lock: refused without the confirmation, done with it.
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

    # Open round 1 with a closing date, remind, then the panel answers (one suggests a
    # rename first).
    shown = post(client, f"{base}/rounds/1/open/", {"closes_at": "2030-01-31T17:00"})
    assert shown == ["Round 1 is open; joined panelists were told by e-mail."]
    round1.refresh_from_db()
    assert round1.status == Round.Status.OPEN and round1.closes_at.year == 2030
    assert post(client, f"{base}/rounds/1/remind/") == [
        "Reminders sent to 7 panelist(s) who have not submitted."
    ]
    built = PanelStudy(study=study, coordinator=coordinator, panelists=panelists)
    scheduling = round1.items.get(name="Scheduling")
    services.add_suggestion(
        panelist=panelists[0],
        round_=round1,
        kind="rename",
        text="Clearer for clinicians.",
        target_identity=scheduling.identity,
        details={"name": "Appointment scheduling"},
    )
    answer_all(built, round1, {"Billing": [1, 5, 9, 5, 2, 8, 3]})

    assert post(client, f"{base}/rounds/1/close/") == [
        "Round 1 closed; who did not submit is a non-responder."
    ]
    assert post(client, f"{base}/rounds/1/analyse/") == [
        "Round 1 analysed under the locked consensus rule."
    ]
    round_page = client.get(f"{base}/rounds/1/")
    text = round_page.content.decode()
    assert "consensus in" in text and "no consensus" in text
    assert "withheld (&lt;5)" in text  # the two nurses
    assert "1 of 4 items of round 1 without consensus" in text
    overview = client.get(f"{base}/").content.decode()
    assert "7 / 7 (100%)" in overview

    # Finishing early needs a reason; nothing changes without one.
    shown = post(client, f"{base}/finish/", {"reason": ""})
    assert shown[0].startswith("The locked stopping rule is not met (round 1 of at most 2")
    study.refresh_from_db()
    assert study.status == DelphiStudy.Status.RUNNING

    # The next round waits for the feedback and for the suggestion's triage.
    shown = post(client, f"{base}/rounds/next/")
    assert shown == ["Cannot build on round 1: it is analysed, not feedback released"]
    suggestion = Suggestion.objects.get()
    shown = post(
        client,
        f"{base}/rounds/1/suggestions/{suggestion.pk}/triage/",
        {"decision": "accept", "reason": ""},
    )
    assert shown == ["Give the reason for accepting or rejecting the suggestion"]
    suggestion.refresh_from_db()
    assert suggestion.status == Suggestion.Status.PENDING
    shown = post(
        client,
        f"{base}/rounds/1/suggestions/{suggestion.pk}/triage/",
        {"decision": "accept", "reason": "The panel's wording is clearer."},
    )
    assert shown == ["Suggestion accepted."]
    assert post(client, f"{base}/rounds/1/feedback/") == [
        "The feedback of round 1 is visible to the panel."
    ]
    shown = post(client, f"{base}/rounds/next/")
    assert shown == ["Round 2 drafted with 2 item(s); open it."]
    round2 = study.rounds.get(number=2)
    assert sorted(round2.items.values_list("name", "item_version")) == [
        ("Appointment scheduling", 2),
        ("Billing", 1),
    ]

    # Round 2 reaches consensus on both; the stopping rule is met, so no reason is needed.
    post(client, f"{base}/rounds/2/open/", {"closes_at": ""})
    answer_all(built, round2, {})
    post(client, f"{base}/rounds/2/close/")
    post(client, f"{base}/rounds/2/analyse/")
    assert "Stopping rule met" in client.get(f"{base}/").content.decode()
    shown = post(client, f"{base}/finish/", {"reason": ""})
    assert shown[0].startswith("Study finished (stopping rule met:")
    study.refresh_from_db()
    assert study.status == DelphiStudy.Status.FINISHED

    # Release: a name is needed; then the consensus taxonomy is a new version.
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


# --------------------------------------------------------------------------- creating


@pytest.mark.django_db
def test_creating_needs_the_permission(client):
    user = UserFactory()
    client.force_login(user)
    assert client.get("/delphi/new/").status_code == 403
    assert client.post("/delphi/new/", {"title": "x"}).status_code == 403
    user.user_permissions.add(Permission.objects.get(codename="add_delphistudy"))
    assert client.get("/delphi/new/").status_code == 200


@pytest.mark.django_db
def test_creating_from_the_fixture_or_an_existing_version(client):
    client.force_login(staff_user())
    response = client.post(
        "/delphi/new/", {"title": "From MedHELM", "aims": "", "taxonomy_source": "fixture"}
    )
    from_fixture = DelphiStudy.objects.get(title="From MedHELM")
    assert response.status_code == 302
    assert from_fixture.draft_taxonomy.source == TaxonomyVersion.Source.FIXTURE
    response = client.post(
        "/delphi/new/",
        {
            "title": "Same draft",
            "taxonomy_source": "version",
            "taxonomy_version": str(from_fixture.draft_taxonomy.pk),
        },
    )
    assert response.status_code == 302
    assert DelphiStudy.objects.get(title="Same draft").draft_taxonomy == from_fixture.draft_taxonomy


@pytest.mark.django_db
def test_a_bad_upload_is_a_form_error_and_creates_nothing(client):
    client.force_login(staff_user())
    versions = TaxonomyVersion.objects.count()
    bad_csv = SimpleUploadedFile("draft.csv", b"category,task\nA,x\n", content_type="text/csv")
    response = client.post(
        "/delphi/new/",
        {"title": "Bad", "taxonomy_source": "upload", "taxonomy_file": bad_csv},
    )
    assert response.status_code == 200
    assert "the header needs the column(s) [&#x27;subcategory&#x27;]" in response.content.decode()
    # A name that is taken already: refused by the service, inside the same transaction.
    services.create_taxonomy_version(tree=SMALL_TAXONOMY, source="import")
    response = client.post(
        "/delphi/new/",
        {"title": "Taken", "taxonomy_source": "upload", "taxonomy_file": taxonomy_upload()},
    )
    assert response.status_code == 200
    assert "a version named &#x27;Small draft&#x27; exists already" in response.content.decode()
    response = client.post("/delphi/new/", {"title": "No file", "taxonomy_source": "upload"})
    assert "Choose a file to upload." in response.content.decode()
    assert not DelphiStudy.objects.exists()
    assert TaxonomyVersion.objects.count() == versions + 1


# --------------------------------------------------------------------------- protocol


@pytest.fixture
def setup_study(db) -> PanelStudy:
    return make_panel_study(n_panelists=2, lock=False)


@pytest.mark.django_db
def test_a_bad_rule_is_a_form_error_and_saves_nothing(client, setup_study):
    study = setup_study.study
    client.force_login(setup_study.coordinator)
    before = (study.consensus_rule, DelphiAuditEvent.objects.count())
    url = f"/delphi/{study.pk}/protocol/"
    response = client.post(url, protocol_post(study, rule_json="{not json"))
    assert response.status_code == 200
    assert "not valid JSON: line 1, column 2" in response.content.decode()
    response = client.post(
        url, protocol_post(study, rule_json='{"op": "and", "rules": [{"preset": "nope"}]}')
    )
    assert response.status_code == 200
    assert "unknown preset" in response.content.decode()
    response = client.post(
        url, protocol_post(study, rule_preset="percent_agreement", pct_at_least="40")
    )
    assert "Consensus rule at rule.pct_at_least" in response.content.decode()
    response = client.post(url, protocol_post(study, max_rounds="", all_resolved=None))
    assert "Stopping rule sets no criterion" in response.content.decode()
    study.refresh_from_db()
    assert (study.consensus_rule, DelphiAuditEvent.objects.count()) == before


@pytest.mark.django_db
def test_an_advanced_composite_rule_is_saved_and_described(client, setup_study):
    study = setup_study.study
    client.force_login(setup_study.coordinator)
    rule = {"op": "and", "rules": [{"preset": "comet_70_15"}, {"preset": "median_iqr"}]}
    url = f"/delphi/{study.pk}/protocol/"
    assert post(client, url, protocol_post(study, rule_json=json.dumps(rule))) == [
        "Protocol saved."
    ]
    study.refresh_from_db()
    assert study.consensus_rule["op"] == "and" and len(study.consensus_rule["rules"]) == 2
    page = client.get(url).content.decode()
    assert "(COMET: consensus in when" in page and " AND (Median" in page
    assert "&quot;op&quot;: &quot;and&quot;" in page  # back in the JSON box for editing


@pytest.mark.django_db
def test_the_draft_taxonomy_changes_until_the_lock(client, setup_study):
    study = setup_study.study
    client.force_login(setup_study.coordinator)
    url = f"/delphi/{study.pk}/protocol/taxonomy/"
    csv_file = SimpleUploadedFile(
        "cardiology.csv", b"category,subcategory\nCardiology,Heart failure\n"
    )
    shown = post(client, url, {"taxonomy_source": "upload", "taxonomy_file": csv_file})
    assert shown == ["The draft taxonomy is now 'cardiology'."]
    study.refresh_from_db()
    assert study.draft_taxonomy.name == "cardiology"
    assert post(client, url, {"taxonomy_source": "version"}) == [
        "Existing version: Choose a taxonomy version."
    ]
    services.lock_protocol(study=study, actor=setup_study.coordinator)
    versions = TaxonomyVersion.objects.count()
    shown = post(
        client,
        url,
        {
            "taxonomy_source": "upload",
            "taxonomy_file": taxonomy_upload({**SMALL_TAXONOMY, "name": "Late"}, name="late.json"),
        },
    )
    assert shown[0].startswith("The protocol of 'Consensus on a small taxonomy' is locked")
    assert TaxonomyVersion.objects.count() == versions  # the import was rolled back
    assert post(client, f"/delphi/{study.pk}/protocol/", protocol_post(study)) == [
        "The protocol is locked; it can no longer change."
    ]


# --------------------------------------------------------------------------- panel


@pytest.mark.django_db
def test_panel_invite_errors_renew_and_withdraw(client, django_capture_on_commit_callbacks):
    built = make_panel_study(n_panelists=1, lock=False)
    study = built.study
    client.force_login(built.coordinator)
    url = f"/delphi/{study.pk}/panel/"
    response = client.post(url, {"email": "panelist0@example.org"})
    assert response.status_code == 200
    assert "Panelist0@example.org is already on the panel" in response.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        post(client, url, {"email": "late@example.org", "stakeholder_group": "nurse"})
    late = study.panelists.get(email="late@example.org")
    first_link = mail.outbox[-1].body
    with django_capture_on_commit_callbacks(execute=True):
        shown = post(client, f"{url}{late.pk}/renew/")
    assert shown == ["A new link went to late@example.org; the old one no longer works."]
    assert mail.outbox[-1].body != first_link
    # Someone who joined logs in as usual: no new link.
    joined = built.panelists[0]
    assert post(client, f"{url}{joined.pk}/renew/") == [
        "P01 has already joined; they log in as usual"
    ]
    shown = post(client, f"{url}{joined.pk}/withdraw/", {"reason": "Moved abroad."})
    assert shown == ["P01 withdrawn; answers already submitted stay in their rounds."]
    event = DelphiAuditEvent.objects.get(action="panelist.withdraw")
    assert event.reason == "Moved abroad." and event.actor == built.coordinator
    assert client.post(f"{url}999999/withdraw/").status_code == 404  # not on this panel


# --------------------------------------------------------------------------- exports


@pytest.mark.django_db
def test_exports_unknown_names_404_and_service_errors_400(client, setup_study):
    study = setup_study.study
    client.force_login(setup_study.coordinator)
    assert client.get(f"/delphi/{study.pk}/export/nothing.csv").status_code == 404
    response = client.get(f"/delphi/{study.pk}/export/protocol.json")  # not locked yet
    assert response.status_code == 400
    assert 'data-testid="export-error"' in response.content.decode()
    services.lock_protocol(study=study, actor=setup_study.coordinator)
    response = client.get(f"/delphi/{study.pk}/export/protocol.json")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == (
        f'attachment; filename="delphi-study-{study.pk}-protocol.json"'
    )
    assert "protocol.json" in client.get(f"/delphi/{study.pk}/").content.decode()


# --------------------------------------------------------------------------- home


@pytest.mark.django_db
def test_home_lists_delphi_studies_by_role(client):
    built = make_panel_study(n_panelists=1)
    client.force_login(built.coordinator)
    page = client.get("/").content.decode()
    assert f'href="/delphi/{built.study.pk}/"' in page
    client.force_login(built.panelists[0].user)
    page = client.get("/").content.decode()
    assert f'href="/delphi/{built.study.pk}/round/"' in page
    assert f'href="/delphi/{built.study.pk}/"' not in page
