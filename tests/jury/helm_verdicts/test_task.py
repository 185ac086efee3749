"""The jury.import_helm_verdicts task that follows a HELM item import."""

from __future__ import annotations

import json

import pytest

from annotation import imports
from annotation.models import AuditEvent, ImportJob, Item
from jury.helm_verdicts import import_helm_verdicts
from jury.models import Judge, JudgeScore
from jury.tasks import import_helm_verdicts_for_job
from tests.jury.helm_verdicts.factories import (
    HELM_RUN,
    MODEL,
    edit,
    import_items,
    run_copy,
    sample_states,
    snapshot,
    stored,
    verdicts,
)


def test_task_imports_the_verdicts_of_a_succeeded_helm_import(study, coordinator):
    job = import_items(study, coordinator)

    result = import_helm_verdicts_for_job(job.pk)

    assert result["status"] == "imported" and result["scores_created"] == 27
    assert stored(study) == verdicts(sample_states())
    event = AuditEvent.objects.get(action="jury.helm_import")
    assert event.actor == coordinator
    before = snapshot(study)
    again = import_helm_verdicts_for_job(job.pk)  # a second delivery
    assert (again["status"], again["scores_created"], again["unchanged"]) == ("imported", 0, 27)
    assert snapshot(study) == before


@pytest.mark.parametrize(
    ("uploaded_name", "external_id"),
    [
        ("medi_qa:model=demo_vendor_demo-model-7b.json", "medi_qa/id101"),
        ("scenario_state.json", "id101"),
    ],
)
def test_task_forms_the_ids_as_the_item_import_did_for_a_bare_scenario_state(
    study, coordinator, uploaded_name, external_id
):
    job = imports.start_import(
        study=study,
        uploaded_name=uploaded_name,
        content=(HELM_RUN / "scenario_state.json").read_bytes(),
        file_format="helm",
        actor=coordinator,
        background=False,
    )
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert Item.objects.filter(study=study, external_id=external_id).exists()

    result = import_helm_verdicts_for_job(job.pk)

    assert (result["status"], result["scores_created"], result["unmatched"]) == ("imported", 27, 0)


def test_task_skips_other_jobs(study, coordinator):
    jsonl = imports.start_import(
        study=study,
        uploaded_name="items.jsonl",
        content=json.dumps({"id": "x1", "input": "Q?", "output": "A.", "model": MODEL}).encode(),
        file_format="jsonl",
        actor=coordinator,
        background=False,
    )
    failed = imports.start_import(
        study=study,
        uploaded_name="run.zip",
        content=b"PK\x03\x04 not really a zip",
        file_format="helm",
        actor=coordinator,
        background=False,
    )
    assert failed.status == ImportJob.Status.FAILED
    queued = ImportJob.objects.create(
        study=study, created_by=coordinator, file_format="helm", source_path="imports/none.zip"
    )

    assert import_helm_verdicts_for_job(jsonl.pk)["status"] == "skipped"
    assert import_helm_verdicts_for_job(failed.pk)["status"] == "skipped"
    assert import_helm_verdicts_for_job(queued.pk)["status"] == "skipped"
    assert import_helm_verdicts_for_job(10**9)["status"] == "missing"
    assert not JudgeScore.objects.exists() and not Judge.objects.exists()


def test_task_reports_a_conflict_without_saving(study, coordinator, tmp_path):
    job = import_items(study, coordinator)
    changed = run_copy(tmp_path, edit(0, "gpt", "accuracy", score=1))
    import_helm_verdicts(study=study, source=changed, actor=coordinator)
    before = snapshot(study)

    result = import_helm_verdicts_for_job(job.pk)

    assert result["status"] == "failed" and result["saved"] is False
    assert [c["where"] for c in result["conflicts"]] == [
        "request_states[0].annotations.medi_qa.gpt.accuracy"
    ]
    assert snapshot(study) == before
