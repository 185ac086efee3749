"""Ratings and scores imports follow the items import's rule: an upload at or above
MEDHELM_IMPORT_INLINE_MAX_BYTES is stored and parsed by the import task, not in the request;
errors are capped on every page (the first 100 and the count) and the complete list
downloads as CSV."""

from __future__ import annotations

import csv
import io
import re
import tracemalloc

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.signals import request_started
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from annotation.models import ImportedRating, ImportJob, StudyMembership
from annotation.tasks import run_import
from jury.models import Judge, JudgeScore, MetricScore
from jury.tasks import run_score_import
from tests.factories import make_study_with_members

RATINGS_HEADER = "external_id,model,rater,criterion,value,comment\n"
SCORES_HEADER = "external_id,model,kind,scorer,criterion,value,comment\n"
SHOWN = 100


@pytest.fixture
def built(db):
    return make_study_with_members(n_items=4)


def _urls(study_id: int) -> dict[str, str]:
    return {
        "ratings": f"/studies/{study_id}/import/ratings/",
        "scores": f"/studies/{study_id}/jury/import/scores/",
    }


def _bad_ratings(n: int) -> str:
    """n lines, each naming an item the study does not have (one error per line)."""
    return RATINGS_HEADER + "".join(f"x{i:07d},model-a,ext-1,accuracy,4,\n" for i in range(n))


def _reset_peak(**kwargs) -> None:
    tracemalloc.reset_peak()


def _error_rows(page: str) -> int:
    return page.count('data-testid="long-import-error"')


def _error_file(client, page: str) -> list[list[str]]:
    match = re.search(r'href="([^"]+)"[^>]*data-testid="long-import-error-file"', page)
    assert match, "no link to the complete error file on the page"
    response = client.get(match.group(1))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    body = b"".join(response.streaming_content).decode()
    return list(csv.reader(io.StringIO(body)))


def test_a_20_mb_ratings_file_is_parsed_by_the_task_with_errors_capped(built, client, tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text(_bad_ratings(600_000))
    assert path.stat().st_size >= 20_000_000
    url = _urls(built.study.pk)["ratings"]
    with path.open("rb") as upload:
        body = encode_multipart(BOUNDARY, {"file": upload})  # built before measuring
    client.force_login(built.coordinator)
    # A serving process has loaded its URLconf (and the modules its views import) already.
    assert client.get(url).status_code == 200

    # Measured from the moment Django has the request: the test client's own copy of the
    # body (FakePayload) is made before, and stays in memory during, the request.
    tracemalloc.start()
    request_started.connect(_reset_peak)
    try:
        response = client.generic("POST", url, body, content_type=MULTIPART_CONTENT)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        request_started.disconnect(_reset_peak)
        tracemalloc.stop()
    del body

    # The request stored the upload and queued a job; it did not parse the file.
    job = ImportJob.objects.get(study=built.study)
    assert (job.kind, job.status) == ("ratings", ImportJob.Status.QUEUED)
    assert response.status_code == 302, response.content[:2000]
    assert response["Location"] == f"{url}?job={job.pk}"
    assert peak < 50 * 2**20, f"the request's memory peaked at {peak:,} bytes"
    queued = client.get(response["Location"]).content.decode()
    assert "long-import-progress" in queued and "queued" in queued
    assert _error_rows(queued) == 0

    run_import(job.pk)  # what the worker runs

    job.refresh_from_db()
    assert job.status == ImportJob.Status.FAILED
    page = client.get(f"{url}?job={job.pk}").content.decode()
    assert _error_rows(page) == SHOWN
    assert "Nothing was imported: 600000 problems" in page
    assert "no item &#x27;x0000000&#x27; with model &#x27;model-a&#x27;" in page
    rows = _error_file(client, page)
    assert rows[0] == ["line", "column", "reason"]
    assert len(rows) == 1 + 600_000
    assert rows[1][:2] == ["2", "external_id"] and rows[-1][:2] == ["600001", "external_id"]
    assert not ImportedRating.objects.exists()
    assert not StudyMembership.objects.filter(study=built.study, is_imported=True).exists()


def test_a_scores_file_above_the_inline_limit_is_parsed_by_the_task(built, client, settings):
    settings.MEDHELM_IMPORT_INLINE_MAX_BYTES = 10_000
    n = 5_000
    text = SCORES_HEADER + "".join(
        f"case-0000,model-a,judge,j,accuracy,{9 + i},\n" for i in range(n)
    )
    url = _urls(built.study.pk)["scores"]
    client.force_login(built.coordinator)
    response = client.post(url, {"file": SimpleUploadedFile("scores.csv", text.encode())})

    job = ImportJob.objects.get(study=built.study)
    assert (job.kind, job.status) == ("scores", ImportJob.Status.QUEUED)
    assert response.status_code == 302 and response["Location"] == f"{url}?job={job.pk}"

    run_score_import(job.pk)  # what the worker runs

    page = client.get(f"{url}?job={job.pk}").content.decode()
    assert _error_rows(page) == SHOWN
    assert f"Nothing was imported: {n} problems" in page
    rows = _error_file(client, page)
    assert len(rows) == 1 + n
    assert rows[1] == ["2", "value", "9 is outside the scale of accuracy (1 to 5)"]
    assert not JudgeScore.objects.exists() and not Judge.objects.filter(name="j").exists()


def test_a_good_file_in_the_background_is_saved_and_summarised(built, client, settings):
    settings.MEDHELM_IMPORT_INLINE_MAX_BYTES = 10
    url = _urls(built.study.pk)["scores"]
    text = (
        SCORES_HEADER + "case-0000,model-a,metric,bleu,,0.4,\ncase-0001,model-a,metric,bleu,,0.5,\n"
    )
    client.force_login(built.coordinator)
    response = client.post(url, {"file": SimpleUploadedFile("scores.csv", text.encode())})
    assert response.status_code == 302
    job = ImportJob.objects.get(study=built.study)

    run_score_import(job.pk)

    job.refresh_from_db()
    assert job.status == ImportJob.Status.SUCCEEDED
    page = client.get(f"{url}?job={job.pk}").content.decode()
    assert "<strong>2</strong> scores created" in page
    assert MetricScore.objects.filter(metric="bleu").count() == 2
    run_score_import(job.pk)  # delivered twice: nothing changes
    assert MetricScore.objects.count() == 2


def test_an_inline_import_caps_the_errors_it_shows(built, client):
    url = _urls(built.study.pk)["ratings"]
    client.force_login(built.coordinator)
    response = client.post(
        url, {"file": SimpleUploadedFile("ratings.csv", _bad_ratings(150).encode())}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert _error_rows(page) == SHOWN
    assert "Nothing was imported: 150 problems" in page
    rows = _error_file(client, page)
    assert len(rows) == 1 + 150 and rows[-1][0] == "151"
    assert not ImportedRating.objects.exists()


def test_only_the_study_coordinators_download_an_error_file(built, client):
    url = _urls(built.study.pk)["ratings"]
    client.force_login(built.coordinator)
    page = client.post(
        url, {"file": SimpleUploadedFile("ratings.csv", _bad_ratings(3).encode())}
    ).content.decode()
    link = re.search(r'href="([^"]+)"[^>]*data-testid="long-import-error-file"', page).group(1)
    client.force_login(built.researcher)
    assert client.get(link).status_code == 403
    other = make_study_with_members(n_items=1, name="Other")
    client.force_login(other.coordinator)
    assert client.get(link).status_code == 404
