"""Importing again changes nothing; a job or a task delivered twice imports once."""

from __future__ import annotations

import pytest

from annotation import imports
from annotation.imports import jobs
from annotation.models import AuditEvent, ImportJob, Item
from tests.annotation.imports.factories import DATA, item_state, jsonl, start


def test_importing_the_same_file_twice_changes_nothing(study, coordinator):
    data = (DATA / "items.jsonl").read_bytes()
    first = start(study, coordinator, data)
    before = {i.pk: item_state(i) for i in Item.objects.filter(study=study)}

    second = start(study, coordinator, data)

    assert (first.created_items, first.unchanged_items) == (3, 0)
    assert second.status == ImportJob.Status.SUCCEEDED
    assert (second.created_items, second.unchanged_items) == (0, 3)
    assert {i.pk: item_state(i) for i in Item.objects.filter(study=study)} == before
    assert AuditEvent.objects.filter(study=study, action="items.import").count() == 1


def test_a_known_item_with_a_different_text_is_an_error_not_unchanged(study, coordinator):
    start(study, coordinator, jsonl({"id": "a", "model": "m", "input": "q", "output": "old"}))

    job = start(
        study,
        coordinator,
        jsonl(
            {"id": "b", "model": "m", "input": "q", "output": "x"},
            {"id": "a", "model": "m", "input": "q", "output": "new"},
        ),
    )

    assert job.errors == [
        {
            "where": "line 2",
            "reason": "external_id 'a' with model 'm' is already in this study with a different "
            "output; an import never changes an existing item",
        }
    ]
    assert list(Item.objects.filter(study=study).values_list("external_id", "output_text")) == [
        ("a", "old")
    ]


def test_run_import_job_twice_imports_once(study, coordinator):
    job = start(study, coordinator, (DATA / "items.jsonl").read_bytes(), background=False)
    assert Item.objects.filter(study=study).count() == 3

    again = imports.run_import_job(job_id=job.pk)

    assert again.pk == job.pk and again.status == ImportJob.Status.SUCCEEDED
    assert (again.created_items, again.finished_at) == (3, job.finished_at)
    assert Item.objects.filter(study=study).count() == 3
    assert AuditEvent.objects.filter(study=study, action="items.import").count() == 1


def test_a_job_left_running_by_a_dead_worker_starts_again(study, coordinator, monkeypatch):
    dispatched = []
    monkeypatch.setattr(jobs, "queue_import_job", dispatched.append)
    job = start(study, coordinator, (DATA / "items.jsonl").read_bytes(), background=True)
    ImportJob.objects.filter(pk=job.pk).update(
        status=ImportJob.Status.RUNNING, processed_rows=2, total_rows=3
    )

    done = imports.run_import_job(job_id=job.pk)

    assert done.status == ImportJob.Status.SUCCEEDED
    assert (done.created_items, done.processed_rows, done.total_rows) == (3, 3, 3)


def test_an_unexpected_error_fails_the_job_and_is_raised(study, coordinator, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(jobs, "create_items", broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        start(study, coordinator, (DATA / "items.jsonl").read_bytes())

    job = ImportJob.objects.get(study=study)
    assert job.status == ImportJob.Status.FAILED
    assert job.errors == [
        {"where": "import", "reason": "unexpected error: RuntimeError('disk on fire')"}
    ]
    assert not Item.objects.filter(study=study).exists()
    # Finished: running it again returns it as it is.
    assert imports.run_import_job(job_id=job.pk).status == ImportJob.Status.FAILED


def test_the_task_runs_the_job_and_is_safe_to_deliver_again(study, coordinator, monkeypatch):
    from annotation import tasks

    monkeypatch.setattr(jobs, "queue_import_job", lambda job_id: None)
    job = start(study, coordinator, (DATA / "items.jsonl").read_bytes(), background=True)

    first = tasks.run_import.apply(args=[job.pk])
    second = tasks.run_import.apply(args=[job.pk])

    assert first.result == second.result == {"job": job.pk, "status": "succeeded"}
    assert Item.objects.filter(study=study).count() == 3
    assert tasks.run_import.apply(args=[job.pk + 1000]).result == {
        "job": job.pk + 1000,
        "status": "missing",
    }


def test_the_task_retries_a_database_error_only_while_the_job_is_unfinished(
    study, coordinator, monkeypatch
):
    from django.db import OperationalError

    from annotation import tasks

    monkeypatch.setattr(jobs, "queue_import_job", lambda job_id: None)
    job = start(study, coordinator, (DATA / "items.jsonl").read_bytes(), background=True)
    calls = []

    def database_down(*, job_id, **_):
        calls.append(job_id)
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(tasks, "run_import_job", database_down)
    assert tasks.run_import.apply(args=[job.pk]).failed()
    assert len(calls) == 1 + tasks.run_import.max_retries  # queued: retried (eagerly here)

    calls.clear()
    ImportJob.objects.filter(pk=job.pk).update(status=ImportJob.Status.FAILED)
    assert tasks.run_import.apply(args=[job.pk]).failed()
    assert len(calls) == 1  # a recorded failure is final
