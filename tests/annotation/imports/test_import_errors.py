"""A file with problems: every one is recorded on the job, and nothing is saved."""

from __future__ import annotations

from annotation import imports, services
from annotation.models import AuditEvent, ImportJob, Item
from annotation.selectors import taxonomy_node_for
from delphi.services import create_taxonomy_version
from tests.annotation.imports.factories import BAD_JSONL, BAD_JSONL_ERRORS, item_state, jsonl, start
from tests.factories import MEDHELM_CRITERIA, item_rows


def test_bad_rows_are_all_reported_and_nothing_is_saved(study, coordinator):
    services.create_items(study=study, rows=item_rows(3, prefix="old"), actor=coordinator)
    before = {i.pk: item_state(i) for i in Item.objects.filter(study=study)}
    assert BAD_JSONL.index(b"\xe9") == 446

    job = start(study, coordinator, BAD_JSONL)

    assert job.status == ImportJob.Status.FAILED
    assert job.errors == BAD_JSONL_ERRORS
    assert (job.created_items, job.unchanged_items, job.total_rows) == (0, 0, 8)
    # Nothing saved, not even the good lines 1 and 8; the old items are untouched.
    assert {i.pk: item_state(i) for i in Item.objects.filter(study=study)} == before
    assert not AuditEvent.objects.filter(study=study, action="items.import", actor=None).exists()
    progress = imports.import_progress(job)
    assert progress["status"] == "failed" and progress["error_count"] == 6
    assert progress["errors"] == BAD_JSONL_ERRORS


def test_a_name_shared_by_a_task_and_its_subcategory_means_the_task(coordinator):
    version = create_taxonomy_version(
        tree={
            "name": "Shared names",
            "categories": [
                {"name": "Same", "subcategories": [{"name": "Same", "tasks": ["Same"]}]}
            ],
        },
        source="manual",
    )
    study = services.create_study(
        name="Shared", created_by=coordinator, criteria=MEDHELM_CRITERIA, taxonomy_version=version
    )
    task = version.nodes.get(kind="task")
    assert imports.task_names_for(study=study) == {"Same": task.pk}
    assert taxonomy_node_for(study=study, name="Same") == task


def test_task_in_a_study_without_taxonomy_is_an_error(coordinator):
    study = services.create_study(
        name="No taxonomy", created_by=coordinator, criteria=MEDHELM_CRITERIA
    )
    job = start(
        study,
        coordinator,
        jsonl(
            {"id": "x", "model": "m", "input": "q", "output": "a", "task": "Planning Treatments"}
        ),
    )
    assert job.errors == [
        {
            "where": "line 1",
            "reason": "task 'Planning Treatments' given, but the study has no taxonomy version",
        }
    ]
    assert not Item.objects.filter(study=study).exists()


def test_stored_errors_are_capped_with_a_count_of_the_rest(study, coordinator):
    job = start(study, coordinator, b"\n".join([b"[]"] * 250))

    assert job.status == ImportJob.Status.FAILED
    assert len(job.errors) == imports.MAX_STORED_ERRORS + 1
    assert job.errors[-1] == {"where": "...", "reason": "and 50 more errors", "more": 50}
    progress = imports.import_progress(job)
    assert progress["error_count"] == 250
    assert len(progress["errors"]) == 50
    assert progress["errors"][0] == {
        "where": "line 1",
        "reason": "expected a JSON object, got a list",
    }
