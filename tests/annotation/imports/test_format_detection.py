"""The import format is read from the file (content first, then name) unless the coordinator
chooses one; a choice the content contradicts is named on the job; a failed import is shown
as failed, not as a full bar."""

from __future__ import annotations

import io

import pytest

from annotation import imports
from annotation.imports.formats import detect_format, peek
from annotation.models import ImportJob, Item
from tests.annotation.imports.factories import DATA, HELM_RUN, helm_zip, jsonl, start

CSV = b"external_id,model,input,output\nc1,m,q,a\nc2,m,q,b\nc3,m,q,c\nc4,m,q,d\n"
LINES = jsonl(
    {"external_id": "c1", "model": "m", "input": "q", "output": "a"},
    {"external_id": "c2", "model": "m", "input": "q", "output": "b"},
)


@pytest.mark.parametrize(
    ("name", "head", "expected", "from_content"),
    [
        ("items.jsonl", CSV, "csv", True),  # the content wins over the name
        ("items.csv", LINES, "jsonl", True),
        ("items.txt", b"\xef\xbb\xbf" + CSV, "csv", True),  # a BOM is not content
        ("items.json", b'\n  {"external_id": "c1", "model": "m"}\n', "jsonl", True),
        ("run.zip", helm_zip(), "helm", True),
        ("anything.bin", helm_zip(), "helm", True),
        ("scenario_state.json", (HELM_RUN / "scenario_state.json").read_bytes(), "helm", True),
        ("state.json", b'{"request_states": [], "adapter_spec": {}}', "helm", True),
        ("items.csv", b"   \n", "csv", False),  # nothing to read: the name decides
        ("items.jsonl", b"[1, 2]", "jsonl", False),
        ("items", b"", "jsonl", False),
    ],
)
def test_detect_format(name, head, expected, from_content):
    detection = detect_format(name=name, head=head)
    assert (detection.file_format, detection.from_content) == (expected, from_content)


def test_the_reason_names_a_name_that_says_otherwise():
    reason = detect_format(name="items.jsonl", head=CSV).reason
    assert reason == (
        "from the content: its first line is comma-separated, not JSON: a CSV header row; "
        "the name ends in .jsonl, which usually means JSON Lines"
    )


def test_peek_leaves_a_file_where_it_was():
    source = io.BytesIO(CSV)
    source.read(3)
    assert peek(source) == CSV[3:]
    assert source.tell() == 3


def test_a_csv_named_jsonl_is_imported_as_csv(study, coordinator):
    job = start(study, coordinator, CSV, file_format="auto", name="items.jsonl")
    assert (job.status, job.file_format) == (ImportJob.Status.SUCCEEDED, "csv")
    assert job.format_note.startswith("CSV, detected from the content")
    assert Item.objects.filter(study=study).count() == 4


def test_each_format_is_detected_end_to_end(study, coordinator):
    job = start(study, coordinator, (DATA / "items.jsonl").read_bytes(), file_format="auto")
    assert (job.status, job.file_format) == (ImportJob.Status.SUCCEEDED, "jsonl")
    job = start(study, coordinator, helm_zip(), file_format="auto", name="run.zip")
    assert (job.status, job.file_format) == (ImportJob.Status.SUCCEEDED, "helm"), job.errors


def test_a_chosen_format_the_content_contradicts_is_kept_and_named(study, coordinator):
    job = start(study, coordinator, CSV, file_format="jsonl", name="items.csv")
    assert (job.status, job.file_format) == (ImportJob.Status.FAILED, "jsonl")
    assert "not valid JSON" in job.errors[0]["reason"]
    assert job.format_note.startswith("JSON Lines, as chosen; but the file looks like CSV")
    progress = imports.import_progress(job)
    assert progress["format_mismatch"] and progress["failed"]


def test_a_failed_import_is_not_a_full_bar(study, coordinator):
    job = start(study, coordinator, CSV, file_format="jsonl", name="items.csv")
    progress = imports.import_progress(job)
    assert (progress["status"], progress["phase"]) == ("failed", "failed")
    assert progress["percent"] < 100
