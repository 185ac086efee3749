"""What the import page and service refuse before any parsing: an upload above the size in
settings (before its body is read), a file of nothing but whitespace, and a query string
naming no import; and a file that holds no item, which fails its job naming the file."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.test.client import BOUNDARY, FakePayload, encode_multipart
from django.urls import reverse

from annotation.errors import AnnotationError
from annotation.models import ImportJob, Item
from tests.annotation.imports.factories import DATA, start


class CountingPayload(FakePayload):
    """A request body that counts the bytes the server read of it."""

    def __init__(self, content: bytes) -> None:
        super().__init__(content)
        self.bytes_read = 0

    def read(self, size: int = -1, /) -> bytes:
        data = super().read(size)
        self.bytes_read += len(data)
        return data

    def readline(self, size: int = -1, /) -> bytes:
        data = super().readline(size)
        self.bytes_read += len(data)
        return data


def zipped(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def stored_files(media_root) -> list:
    folder = media_root / "imports"
    return sorted(folder.iterdir()) if folder.exists() else []


def import_url(study) -> str:
    return reverse("annotation:import", args=[study.pk])


def test_an_upload_above_the_limit_is_refused_before_its_body_is_read(
    study, coordinator, client, settings, media_root
):
    limit = settings.MEDHELM_IMPORT_MAX_UPLOAD_BYTES = 100_000
    content = b"x" * (10 * 2**20)
    body = encode_multipart(
        BOUNDARY,
        {"file_format": "jsonl", "file": SimpleUploadedFile("huge.jsonl", content)},
    )
    payload = CountingPayload(body)
    client.force_login(coordinator)

    response = client.post(
        import_url(study),
        data=body,
        content_type=f"multipart/form-data; boundary={BOUNDARY}",
        **{"wsgi.input": payload},
    )

    assert response.status_code == 400
    text = response.content.decode()
    assert "huge.jsonl" in text and f"{limit:,} bytes" in text
    assert payload.bytes_read < len(content) / 10, payload.bytes_read
    assert not ImportJob.objects.exists() and stored_files(media_root) == []


@pytest.mark.parametrize("as_stream", [False, True])
def test_the_service_refuses_a_file_above_the_limit(
    study, coordinator, settings, media_root, as_stream
):
    limit = settings.MEDHELM_IMPORT_MAX_UPLOAD_BYTES = 1000
    data = (DATA / "items.jsonl").read_bytes() * 10
    assert len(data) > limit

    with pytest.raises(AnnotationError) as exc:
        start(study, coordinator, io.BytesIO(data) if as_stream else data, name="big.jsonl")

    assert exc.value.field == "file"
    assert "big.jsonl" in exc.value.message and f"{limit:,} bytes" in exc.value.message
    assert not ImportJob.objects.exists() and stored_files(media_root) == []


@pytest.mark.parametrize(
    ("file_format", "name"),
    [("jsonl", "blank.jsonl"), ("csv", "blank.csv"), ("helm", "scenario_state.json")],
)
def test_a_file_of_whitespace_is_an_error_naming_the_file(
    study, coordinator, media_root, file_format, name
):
    with pytest.raises(AnnotationError) as exc:
        start(study, coordinator, b" \n\t\r\n  \n", file_format=file_format, name=name)

    assert exc.value.field == "file"
    assert name in exc.value.message and "whitespace" in exc.value.message
    assert not ImportJob.objects.exists() and stored_files(media_root) == []


def test_the_page_answers_a_whitespace_file_with_a_400(study, coordinator, client):
    client.force_login(coordinator)
    upload = SimpleUploadedFile("blank.jsonl", b"\n\n   \n")

    response = client.post(import_url(study), {"file_format": "jsonl", "file": upload})

    assert response.status_code == 400
    assert "blank.jsonl" in response.content.decode()
    assert not ImportJob.objects.exists()


@pytest.mark.parametrize(
    ("file_format", "name", "data"),
    [
        ("csv", "header.csv", b"external_id,input,output,model\n"),
        ("helm", "scenario_state.json", json.dumps({"request_states": []}).encode()),
        ("helm", "empty.zip", zipped({})),
        ("helm", "readme.zip", zipped({"readme.txt": b"no run here"})),
    ],
    # Named, not shown by their bytes: a zip's bytes hold the time it was made, and the
    # parallel run's processes must collect the same test ids.
    ids=["csv-header", "helm-no-request-states", "helm-empty-zip", "helm-zip-without-runs"],
)
def test_a_file_without_items_fails_naming_the_file(study, coordinator, file_format, name, data):
    job = start(study, coordinator, data, file_format=file_format, name=name)

    assert job.status == ImportJob.Status.FAILED
    [error] = [e for e in job.errors if e.get("level") != "warning"]
    assert error["where"] == "file" and name in error["reason"]
    assert not Item.objects.exists()


@pytest.mark.parametrize("value", ["abc", "1e3", "-1", "99999999999999999999999", "٣"])
def test_a_job_query_that_is_not_an_import_number_is_a_400(study, coordinator, client, value):
    client.force_login(coordinator)

    response = client.get(import_url(study), {"job": value})

    assert response.status_code == 400
    assert "job" in response.content.decode()


def test_a_job_of_another_study_is_not_found(study, coordinator, client):
    client.force_login(coordinator)
    job = start(study, coordinator, (DATA / "items.jsonl").read_bytes())

    assert client.get(import_url(study), {"job": job.pk}).status_code == 200
    assert client.get(import_url(study), {"job": job.pk + 1000}).status_code == 404


def test_the_page_still_checks_the_csrf_token(study, coordinator, settings):
    """The page reads its body only after installing the upload limit, so it checks the CSRF
    token itself: a POST without it is still refused, with it accepted, and a file above the
    limit still gets its 400 (the token comes before the file in the form)."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(coordinator)
    url = import_url(study)
    token = client.get(url).context["csrf_token"]
    data = (DATA / "items.jsonl").read_bytes()

    def post(content: bytes, **fields: str):
        upload = SimpleUploadedFile("items.jsonl", content)
        return client.post(url, {**fields, "file_format": "jsonl", "file": upload})

    assert post(data).status_code == 403
    assert not ImportJob.objects.exists()
    assert post(data, csrfmiddlewaretoken=str(token)).status_code == 302
    settings.MEDHELM_IMPORT_MAX_UPLOAD_BYTES = 10
    refused = post(data, csrfmiddlewaretoken=str(token))
    assert refused.status_code == 400 and "items.jsonl" in refused.content.decode()
    assert ImportJob.objects.count() == 1
