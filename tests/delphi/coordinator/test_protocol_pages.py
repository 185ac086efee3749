"""The protocol page: a bad rule is a form error, a composite rule is saved and described,
the draft taxonomy changes until the lock."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from delphi import services
from delphi.models import DelphiAuditEvent, TaxonomyVersion
from tests.delphi.coordinator.pages import post, protocol_post, taxonomy_upload
from tests.delphi.flow import SMALL_TAXONOMY


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
