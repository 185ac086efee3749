"""An uploaded file is deleted once its job has ended, succeeded or failed: after the steps
that follow an import (the HELM jury verdicts read the same file), on the inline path and on
the Celery path; a job that has not ended keeps its file."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotation import imports
from annotation.imports import after_import, jobs
from annotation.models import ImportJob, Item
from jury.models import JudgeScore
from tests.annotation.imports.factories import DATA, HELM_ZIP_NAME, helm_zip, jsonl, start
from tests.support.after_import_steps import FAILING_STEP

VERDICTS = "jury.import_helm_verdicts"
SAMPLE_VERDICTS = 27  # judge scores in the sample run (tests/annotation/data/helm_run)


def upload_of(job: ImportJob, media_root: Path) -> Path:
    assert job.source_path
    return media_root / job.source_path


def test_an_inline_import_deletes_its_file_after_the_steps_that_read_it(
    study, coordinator, media_root, settings, django_capture_on_commit_callbacks
):
    settings.MEDHELM_AFTER_IMPORT_TASKS = [VERDICTS]
    with django_capture_on_commit_callbacks(execute=True):
        job = start(study, coordinator, helm_zip(), file_format="helm", name=HELM_ZIP_NAME)
        assert upload_of(job, media_root).is_file()  # kept until the transaction commits
    job.refresh_from_db()

    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    # The verdict step read the file before it was deleted.
    assert JudgeScore.objects.filter(item__study=study).count() == SAMPLE_VERDICTS
    assert not upload_of(job, media_root).exists()
    assert list((media_root / "imports").iterdir()) == []


def test_an_inline_import_that_fails_deletes_its_file(
    study, coordinator, media_root, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = start(study, coordinator, jsonl({"id": "x"}))

    assert job.status == ImportJob.Status.FAILED
    assert not upload_of(job, media_root).exists()


def test_a_queued_import_keeps_its_file_until_it_has_run(
    study, coordinator, media_root, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.MEDHELM_AFTER_IMPORT_TASKS = []
    monkeypatch.setattr(jobs, "queue_import_job", lambda job_id: None)
    job = start(study, coordinator, (DATA / "items.jsonl").read_bytes(), background=True)
    imports.release_upload(job_id=job.pk)  # a job that has not ended keeps its file
    assert upload_of(job, media_root).is_file()

    with django_capture_on_commit_callbacks(execute=True):
        job = imports.run_import_job(job_id=job.pk)

    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert not upload_of(job, media_root).exists()


def test_a_job_that_crashes_deletes_its_file_once_marked_failed(
    study, coordinator, media_root, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(jobs, "queue_import_job", lambda job_id: None)
    job = start(study, coordinator, (DATA / "items.jsonl").read_bytes(), background=True)

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(jobs, "validate_rows", broken)
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError):
        imports.run_import_job(job_id=job.pk)
    job.refresh_from_db()

    assert job.status == ImportJob.Status.FAILED
    assert not upload_of(job, media_root).exists()


def test_the_celery_path_deletes_the_file_after_the_last_step_ran(
    study, coordinator, media_root, settings, monkeypatch
):
    """The steps are sent one after the other, each followed, whether it succeeds or fails,
    by the next; the file goes after the last. The messages are run here through Celery's
    own tracing, as a worker would (test_after_import_worker.py runs a real one)."""
    settings.MEDHELM_AFTER_IMPORT_TASKS = [FAILING_STEP, VERDICTS]
    # A worker imports every app's tasks at its start; the messages' errbacks name
    # annotation's own (alone, this test met "NotRegistered" where an earlier test of the
    # process had not imported them).
    after_import.current_app.loader.import_default_modules()
    sent: list[tuple[str, dict]] = []
    monkeypatch.setattr(
        after_import.current_app, "send_task", lambda name, **options: sent.append((name, options))
    )
    # A link (the next step) is sent by the worker; here it runs at once, in this process.
    monkeypatch.setitem(after_import.current_app.conf, "task_always_eager", True)
    job = start(study, coordinator, helm_zip(), file_format="helm", name=HELM_ZIP_NAME)
    upload = upload_of(job, media_root)

    after_import.run_after_import_steps(job_id=job.pk, inline=False)
    [(first, options)] = sent
    assert first == FAILING_STEP and upload.is_file()
    after_import.current_app.tasks[first].apply(
        args=options["args"], link=options.get("link"), link_error=options.get("link_error")
    )
    assert [name for name, _ in sent] == [FAILING_STEP, VERDICTS] and upload.is_file()
    name, options = sent[1]
    after_import.current_app.tasks[name].apply(
        args=options["args"], link=options.get("link"), link_error=options.get("link_error")
    )

    assert not upload.exists()
    job.refresh_from_db()
    assert job.status == ImportJob.Status.FAILED  # the failing step, recorded
    assert [e["where"] for e in imports.import_progress(job)["step_errors"]] == [
        f"after import: {FAILING_STEP}"
    ]
    assert JudgeScore.objects.filter(item__study=study).count() == SAMPLE_VERDICTS
    assert Item.objects.filter(study=study).count() == 4
