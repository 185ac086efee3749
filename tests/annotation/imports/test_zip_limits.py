"""Uploaded zips are unpacked under limits, counting the bytes they really yield: a zip bomb,
a zip whose header lies, a damaged, encrypted or oddly compressed member each end the job
with a reason that names the file, the member and the limit, never with a crash (a 500 on
the page) nor a silent success."""

from __future__ import annotations

import tracemalloc
import zipfile
from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation import imports
from annotation.imports import jobs, read_helm_run
from annotation.models import ImportJob, Item
from tests.annotation.imports.factories import (
    HELM_RUN,
    HELM_ZIP_NAME,
    STATE_MEMBER,
    blank_state,
    helm_zip,
    patch_member,
    start,
)

BOMB_BYTES = 48 * 2**20  # what the bomb unpacks to


def peak_memory(run: Callable[[], Any]) -> tuple[Any, int]:
    """run()'s result and the most memory Python held at once meanwhile (tracemalloc)."""
    tracemalloc.start()
    try:
        result = run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


def _upload(data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(HELM_ZIP_NAME, data, content_type="application/zip")


def start_helm(study, coordinator, data: bytes, **kwargs) -> ImportJob:
    return start(study, coordinator, data, file_format="helm", name=HELM_ZIP_NAME, **kwargs)


def queued(study, coordinator, data: bytes, monkeypatch) -> ImportJob:
    """A job queued for a worker (none runs: the test runs it as the worker would)."""
    monkeypatch.setattr(jobs, "queue_import_job", lambda job_id: None)
    return start_helm(study, coordinator, data, background=True)


def only_error(job: ImportJob) -> str:
    assert job.status == ImportJob.Status.FAILED, job.errors
    [error] = [e for e in job.errors if e.get("level") != "warning"]
    assert error["where"] == "file"
    return error["reason"]


def test_a_zip_bomb_stops_at_the_member_limit_without_unpacking_the_rest(
    study, coordinator, settings, monkeypatch
):
    limit = settings.MEDHELM_IMPORT_ZIP_MAX_MEMBER_BYTES = 2**20
    data = helm_zip(blank_state(BOMB_BYTES))
    assert len(data) * 500 < BOMB_BYTES  # a small zip, a large expansion
    job = queued(study, coordinator, data, monkeypatch)

    job, peak = peak_memory(lambda: imports.run_import_job(job_id=job.pk))

    reason = only_error(job)
    for part in (STATE_MEMBER, HELM_ZIP_NAME, f"{limit:,} bytes", "ZIP_MAX_MEMBER_BYTES"):
        assert part in reason
    # Loosely: reading stopped near the limit, far before the 48 MiB the member holds.
    assert peak < BOMB_BYTES / 4, peak
    assert not Item.objects.exists()


def test_the_bytes_of_all_members_count_against_the_total_limit(
    study, coordinator, settings, monkeypatch
):
    limit = settings.MEDHELM_IMPORT_ZIP_MAX_TOTAL_BYTES = 2**20
    settings.MEDHELM_IMPORT_ZIP_MAX_MEMBER_BYTES = limit
    spec = b"{" + b" " * (limit * 6 // 10) + b"}"  # each member alone is within the limits
    job = queued(study, coordinator, helm_zip(blank_state(limit * 6 // 10), spec=spec), monkeypatch)

    job = imports.run_import_job(job_id=job.pk)

    reason = only_error(job)
    for part in (HELM_ZIP_NAME, f"{limit:,} bytes", "ZIP_MAX_TOTAL_BYTES"):
        assert part in reason


def test_a_zip_with_too_many_members_is_refused(study, coordinator, settings):
    limit = settings.MEDHELM_IMPORT_ZIP_MAX_MEMBERS = 5
    extra = {f"medi_qa/logs/{n}.txt": b"x" for n in range(10)}

    job = start_helm(study, coordinator, helm_zip(extra=extra))

    reason = only_error(job)
    assert HELM_ZIP_NAME in reason and "12 members" in reason and f"limit of {limit}" in reason


def test_a_member_list_too_long_for_the_member_limit_is_not_even_parsed(
    study, coordinator, settings
):
    """The central directory of a zip is read only when its length fits the member limit:
    a lying count of members cannot make the reader build millions of entries."""
    settings.MEDHELM_IMPORT_ZIP_MAX_MEMBERS = 5
    extra = {f"medi_qa/logs/{'n' * 200}{n}.txt": b"" for n in range(400)}

    job = start_helm(study, coordinator, helm_zip(extra=extra))

    reason = only_error(job)
    assert HELM_ZIP_NAME in reason and "list of members" in reason


@pytest.mark.parametrize("declared", [100, "real + 1000"])
def test_a_member_whose_header_lies_about_its_size_is_damaged(study, coordinator, declared):
    state = blank_state(300_000)
    size = len(state) + 1000 if declared == "real + 1000" else declared
    data = patch_member(helm_zip(state), STATE_MEMBER, size=size)

    job = start_helm(study, coordinator, data)

    reason = only_error(job)
    assert STATE_MEMBER in reason and HELM_ZIP_NAME in reason and "damaged" in reason
    assert not Item.objects.exists()


CORRUPT = {
    "bad CRC": (lambda data: patch_member(data, STATE_MEMBER, crc=0x12345678), "CRC"),
    "encrypted": (lambda data: patch_member(data, STATE_MEMBER, flags=0x1), "encrypted"),
    "Deflate64": (lambda data: patch_member(data, STATE_MEMBER, method=9), "Deflate64"),
    "unknown method": (lambda data: patch_member(data, STATE_MEMBER, method=77), "method 77"),
    "bzip2": (lambda data: helm_zip(compression=zipfile.ZIP_BZIP2), "bzip2"),
    "not a zip": (lambda data: b"PK\x03\x04 then nothing of a zip", "not a readable zip"),
}


@pytest.mark.parametrize("kind", list(CORRUPT))
def test_a_corrupt_zip_fails_the_job_with_its_reason(study, coordinator, kind):
    damage, words = CORRUPT[kind]

    job = start_helm(study, coordinator, damage(helm_zip()))

    reason = only_error(job)
    assert HELM_ZIP_NAME in reason and words in reason
    if kind != "not a zip":
        assert STATE_MEMBER in reason
    assert not Item.objects.exists()


@pytest.mark.parametrize("kind", ["bad CRC", "encrypted", "Deflate64"])
def test_the_page_shows_why_a_corrupt_zip_was_not_imported(study, coordinator, client, kind):
    damage, words = CORRUPT[kind]
    client.force_login(coordinator)
    url = reverse("annotation:import", args=[study.pk])
    upload = _upload(damage(helm_zip()))

    response = client.post(url, {"file_format": "helm", "file": upload}, follow=True)

    assert response.status_code == 200
    job = ImportJob.objects.get(study=study)
    assert job.status == ImportJob.Status.FAILED
    assert (
        words in response.content.decode() and "Nothing was imported" in response.content.decode()
    )


def test_a_small_zip_that_unpacks_large_is_not_parsed_in_the_request(study, coordinator, client):
    """Parsing inside the request is for what is provably small; a zip's own size proves
    nothing, so a small zip bomb goes to a worker, after at most the inline limit unpacked."""
    data = helm_zip(blank_state(BOMB_BYTES))
    client.force_login(coordinator)
    url = reverse("annotation:import", args=[study.pk])

    response, peak = peak_memory(
        lambda: client.post(url, {"file_format": "helm", "file": _upload(data)})
    )

    assert response.status_code == 302
    job = ImportJob.objects.get(study=study)
    assert job.status == ImportJob.Status.QUEUED
    assert peak < BOMB_BYTES / 4, peak


def test_the_jury_reads_a_run_under_the_same_limits(settings):
    limit = settings.MEDHELM_IMPORT_ZIP_MAX_MEMBER_BYTES = 2**20
    data = helm_zip(blank_state(BOMB_BYTES))

    run, peak = peak_memory(lambda: read_helm_run(data, name_hint="medi_qa"))

    assert run.request_states is None
    [problem] = run.problems
    assert problem.where == "file" and f"{limit:,} bytes" in problem.reason
    assert peak < BOMB_BYTES / 4, peak


def test_an_honest_zip_is_still_read(study, coordinator):
    job = start_helm(study, coordinator, helm_zip())
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert Item.objects.filter(study=study).count() == len(read_helm_run(HELM_RUN).request_states)
