"""Creating a Delphi study through its page: the permission, the draft taxonomy's sources,
and a bad upload that creates nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile

from delphi import services
from delphi.models import DelphiStudy, TaxonomyVersion
from tests.delphi.coordinator.pages import staff_user, taxonomy_upload
from tests.delphi.flow import SMALL_TAXONOMY
from tests.factories import UserFactory


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
