"""JSON nested deeper than anything an item needs is an error of its line or file, never a
RecursionError (a 500 on the page, a crashed worker)."""

from __future__ import annotations

import json

from annotation.imports import rows
from annotation.models import ImportJob, Item
from tests.annotation.imports.factories import GOOD, helm_zip, jsonl, start

DEEP = 100_000  # far past any recursion limit


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def failed_reasons(job: ImportJob) -> list[tuple[str, str]]:
    assert job.status == ImportJob.Status.FAILED, job.errors
    assert not Item.objects.exists()
    return [(e["where"], e["reason"]) for e in job.errors if e.get("level") != "warning"]


def test_a_jsonl_line_nested_past_the_parser_is_an_error_of_its_line(study, coordinator):
    deep_line = '{"external_id": "d", "model": "m", "input": "q", "output": "a", "metadata": '
    deep_line += nested(DEEP) + "}"

    job = start(study, coordinator, jsonl(GOOD, deep_line))

    [(where, reason)] = failed_reasons(job)
    assert where == "line 2" and "nested too deeply" in reason


def test_metadata_nested_past_the_limit_is_an_error_of_its_line(study, coordinator):
    """Deep enough to pass the JSON parser, too deep to check and store safely."""
    metadata: dict = {}
    inner = metadata
    for _ in range(400):
        inner["k"] = {}
        inner = inner["k"]
    job = start(study, coordinator, jsonl(GOOD | {"external_id": "d", "metadata": metadata}))

    [(where, reason)] = failed_reasons(job)
    assert where == "line 1"
    assert reason == f"metadata is nested more than {rows.MAX_METADATA_DEPTH} levels deep"


def test_metadata_at_the_limit_is_imported(study, coordinator):
    metadata: dict = {}
    inner = metadata
    for _ in range(rows.MAX_METADATA_DEPTH - 1):
        inner["k"] = {}
        inner = inner["k"]
    job = start(study, coordinator, jsonl(GOOD | {"metadata": metadata}))

    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert Item.objects.get().metadata == metadata


def test_a_csv_metadata_cell_nested_past_the_parser_is_an_error_of_its_row(study, coordinator):
    data = f'external_id,input,output,model,metadata\nc1,q,a,m,"{nested(DEEP)}"\n'.encode()

    job = start(study, coordinator, data, file_format="csv", name="items.csv")

    [(where, reason)] = failed_reasons(job)
    assert where == "row 1 (line 2)" and "nested too deeply" in reason


def test_a_scenario_state_nested_past_the_parser_is_an_error_of_the_file(study, coordinator):
    state = ('{"request_states": ' + nested(DEEP) + "}").encode()

    job = start(study, coordinator, helm_zip(state), file_format="helm", name="run.zip")

    [(where, reason)] = failed_reasons(job)
    assert where == "scenario_state.json" and "nested too deeply" in reason


def test_the_sample_run_is_not_too_deep(study, coordinator):
    job = start(study, coordinator, helm_zip(), file_format="helm", name="run.zip")
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert json.dumps(Item.objects.first().metadata)
