"""The steps after a queued import, in a real Celery worker: they run, and a step that fails
there marks the job failed (through the errback it was sent with); the upload is deleted
after the last of them."""

from __future__ import annotations

import time

import pytest
from celery import Celery

from annotation import imports, services
from annotation.imports import jobs, pack_helm_run
from annotation.models import ImportJob, Item
from jury.models import JudgeScore
from tests.annotation.imports.factories import HELM_RUN, start
from tests.factories import MEDHELM_CRITERIA, UserFactory

pytestmark = [pytest.mark.celery_worker, pytest.mark.django_db(transaction=True)]

HELM_NAME = "medi_qa:model=demo_vendor_demo-model-7b.zip"


def import_in_worker(tmp_path, media_root, monkeypatch, after_import_tasks: str, done) -> ImportJob:
    """Queue a HELM import to a worker whose settings name `after_import_tasks`, and wait until
    done(job) holds and its upload is deleted."""
    from tests.support.celery_worker import running_worker

    coordinator = UserFactory()
    study = services.create_study(name="Bg", created_by=coordinator, criteria=MEDHELM_CRITERIA)
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("CELERY_RESULT_BACKEND", raising=False)
    broker = f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}"
    backend = f"db+sqlite:///{tmp_path / 'results.sqlite3'}"
    log = tmp_path / "worker.log"
    # The job is sent by name from an app of the test's own on the worker's broker.
    monkeypatch.setattr(
        jobs, "current_app", Celery("test-sender", broker=broker, set_as_current=False)
    )
    with running_worker(
        broker_url=broker,
        result_backend=backend,
        log_path=log,
        extra_env={
            "MEDHELM_DATA_DIR": str(tmp_path),
            "MEDHELM_AFTER_IMPORT_TASKS": after_import_tasks,
        },
    ):
        job = start(
            study,
            coordinator,
            pack_helm_run(HELM_RUN),
            file_format="helm",
            name=HELM_NAME,
            background=True,
        )
        upload = media_root / job.source_path
        assert upload.is_file()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            job.refresh_from_db()
            if done(job) and not upload.exists():
                break
            time.sleep(0.5)
    assert done(job), (job.status, job.errors, log.read_text()[-3000:])
    assert not upload.exists(), log.read_text()[-3000:]
    return job


def test_a_queued_helm_import_imports_the_jury_verdicts_in_the_worker(
    tmp_path, media_root, monkeypatch
):
    def verdicts_stored(job: ImportJob) -> bool:
        return JudgeScore.objects.filter(item__study=job.study).count() == 27

    job = import_in_worker(
        tmp_path, media_root, monkeypatch, "jury.import_helm_verdicts", verdicts_stored
    )

    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert Item.objects.filter(study=job.study).count() == 4


def test_a_step_that_fails_in_the_worker_marks_the_job_failed(tmp_path, media_root, monkeypatch):
    """annotation.worker_health takes no job id: sent one, it fails in the worker. The other
    step still runs."""

    def both_steps_done(job: ImportJob) -> bool:
        verdicts = JudgeScore.objects.filter(item__study=job.study).count()
        return job.status == ImportJob.Status.FAILED and verdicts == 27

    job = import_in_worker(
        tmp_path,
        media_root,
        monkeypatch,
        "annotation.worker_health,jury.import_helm_verdicts",
        both_steps_done,
    )

    assert job.created_items == 4 and Item.objects.filter(study=job.study).count() == 4
    [error] = imports.import_progress(job)["step_errors"]
    assert error["where"] == "after import: annotation.worker_health"
    assert error["reason"].startswith("TypeError:")
