"""The coordinator's forms refuse what the database cannot store (an uploaded taxonomy with a
name longer than its column, an e-mail longer than its column) and JSON nested too deeply
to parse, as a form error beside the field, on SQLite and on PostgreSQL alike, and create or
change nothing."""

from __future__ import annotations

import html

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from delphi.models import DelphiStudy, Panelist, TaxonomyNode, TaxonomyVersion
from medhelm_site.common.text_limits import column_max_length
from tests.delphi.coordinator.pages import protocol_post, staff_user, taxonomy_upload
from tests.delphi.flow import make_panel_study

pytestmark = pytest.mark.django_db

NODE_NAME = column_max_length(TaxonomyNode, "name")
EMAIL = column_max_length(Panelist, "email")


def _create(client, upload):
    return client.post(
        "/delphi/new/",
        {"title": "From a file", "taxonomy_source": "upload", "taxonomy_file": upload},
    )


@pytest.mark.parametrize(
    ("upload", "message"),
    [
        (
            taxonomy_upload(
                {"name": "Long", "categories": [{"name": "c" * (NODE_NAME + 1)}]}, "long.json"
            ),
            f"categories[0].name: is {NODE_NAME + 1} characters long; at most {NODE_NAME} fit",
        ),
        (
            taxonomy_upload({"name": "Nul", "categories": [{"name": "Ca\x00re"}]}, "nul.json"),
            "categories[0].name: contains a NUL character",
        ),
        (
            SimpleUploadedFile(
                "deep.json", b'{"categories": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
            ),
            "deep.json: the JSON is nested too deeply",
        ),
    ],
    ids=["name-too-long", "nul", "nested-too-deeply"],
)
def test_an_upload_the_database_cannot_store_is_a_form_error(client, upload, message):
    client.force_login(staff_user())
    response = _create(client, upload)
    assert response.status_code == 200
    assert message in html.unescape(response.content.decode())
    # Beside the file field, not only above the form.
    assert message in " ".join(response.context["form"].errors["taxonomy_file"])
    assert not TaxonomyVersion.objects.exists()
    assert not DelphiStudy.objects.exists()


def test_the_invite_form_refuses_an_email_longer_than_its_column(client):
    built = make_panel_study(n_panelists=0, lock=False)
    client.force_login(built.coordinator)
    email = "a" * 64 + "@" + "b" * 63 + "." + "c" * 63 + "." + "d" * 63 + ".org"
    assert len(email) > EMAIL
    response = client.post(f"/delphi/{built.study.pk}/panel/", {"email": email})
    assert response.status_code == 200
    assert f"at most {EMAIL} characters" in " ".join(response.context["form"].errors["email"])
    assert not Panelist.objects.exists()


def test_a_rule_nested_too_deeply_is_a_form_error_and_changes_nothing(client, setup_study):
    study = setup_study.study
    client.force_login(setup_study.coordinator)
    rule = study.consensus_rule
    response = client.post(
        f"/delphi/{study.pk}/protocol/",
        protocol_post(study, rule_json="[" * 100_000 + "]" * 100_000),
    )
    assert response.status_code == 200
    assert response.context["form"].errors["rule_json"] == [
        "nested too deeply to be a consensus rule"
    ]
    study.refresh_from_db()
    assert study.consensus_rule == rule
