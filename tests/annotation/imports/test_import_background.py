"""Imports in the background: queued after the commit, progress in batches, a real worker."""

from __future__ import annotations

import time

import pytest
from celery import Celery

from annotation import imports, services
from annotation.imports import jobs
from annotation.models import ImportJob, Item
from tests.annotation.imports.factories import DATA, jsonl, start
from tests.factories import MEDHELM_CRITERIA, UserFactory


def test_large_uploads_are_queued_after_commit(
    study, coordinator, monkeypatch, settings, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(
        jobs.current_app, "send_task", lambda name, args: sent.append((name, *args))
    )
    settings.MEDHELM_IMPORT_INLINE_MAX_BYTES = 100
    data = (DATA / "items.jsonl").read_bytes()
    assert len(data) > 100

    with django_capture_on_commit_callbacks() as callbacks:
        job = start(study, coordinator, data)  # background=None: decided by the size
        assert sent == []  # not before the job is committed, or the worker might not see it
    for callback in callbacks:
        callback()

    assert job.status == ImportJob.Status.QUEUED
    assert sent == [("annotation.run_import", job.pk)]
    assert not Item.objects.exists()
    assert imports.import_progress(job)["phase"] == "queued"


def test_progress_is_reported_in_batches(study, coordinator, monkeypatch):
    monkeypatch.setattr(jobs, "PROGRESS_EVERY", 2)
    rows = [{"id": f"c{i}", "model": "m", "input": "q", "output": "a"} for i in range(5)]
    seen = []
    start(
        study,
        coordinator,
        jsonl(*rows),
        on_progress=lambda job: seen.append(
            (imports.import_progress(job)["phase"], job.processed_rows, job.total_rows)
        ),
    )
    assert seen == [
        ("checking", 0, 5),
        ("checking", 2, 5),
        ("checking", 4, 5),
        ("saving", 5, 5),
        ("done", 5, 5),
    ]


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_queued_import_runs_in_a_real_worker(tmp_path, settings, monkeypatch):
    from tests.support.celery_worker import running_worker

    coordinator = UserFactory()
    study = services.create_study(name="Bg", created_by=coordinator, criteria=MEDHELM_CRITERIA)
    # The worker process finds the upload under MEDHELM_DATA_DIR/media, as this one does.
    settings.MEDIA_ROOT = tmp_path / "media"
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("CELERY_RESULT_BACKEND", raising=False)
    broker = f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}"
    backend = f"db+sqlite:///{tmp_path / 'results.sqlite3'}"
    rows = [
        {"id": f"case-{i}", "model": f"m{i % 3}", "input": f"q{i}", "output": f"a{i}"}
        for i in range(3000)
    ]
    log = tmp_path / "worker.log"
    # This process's app read its broker at start; the job is sent by name, so an app of
    # the test's own on the worker's broker sends it there.
    monkeypatch.setattr(
        jobs, "current_app", Celery("test-sender", broker=broker, set_as_current=False)
    )
    with running_worker(
        broker_url=broker,
        result_backend=backend,
        log_path=log,
        extra_env={"MEDHELM_DATA_DIR": str(tmp_path)},
    ):
        job = start(study, coordinator, jsonl(*rows), background=True)
        assert job.status == ImportJob.Status.QUEUED
        upload = settings.MEDIA_ROOT / job.source_path
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            job.refresh_from_db()
            # The upload is deleted after the steps that follow the import.
            if job.status in imports.FINISHED and not upload.exists():
                break
            time.sleep(0.5)
    assert job.status == ImportJob.Status.SUCCEEDED, (job.errors, log.read_text()[-3000:])
    assert (job.total_rows, job.processed_rows) == (3000, 3000)
    assert (job.created_items, job.unchanged_items) == (3000, 0)
    assert Item.objects.filter(study=study).count() == 3000
    assert imports.import_progress(job)["percent"] == 100
    assert not upload.exists()
