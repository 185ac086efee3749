"""The steps after a succeeded import (settings.MEDHELM_AFTER_IMPORT_TASKS, e.g. the HELM jury
verdicts) run, or the job is marked failed where the coordinator sees it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from django.urls import reverse

from annotation import imports
from annotation.imports import after_import, pack_helm_run
from annotation.models import ImportJob, Item
from jury.models import JudgeScore
from tests.annotation.imports.factories import HELM_RUN, start
from tests.support.after_import_steps import FAILING_STEP

VERDICTS = "jury.import_helm_verdicts"
HELM_NAME = "medi_qa:model=demo_vendor_demo-model-7b.zip"


def judge_scores(study) -> int:
    return JudgeScore.objects.filter(item__study=study).count()


def changed_run(tmp_path: Path) -> Path:
    """A copy of the sample run with one jury verdict changed."""
    folder = tmp_path / "changed" / "medi_qa"
    shutil.copytree(HELM_RUN, folder)
    path = folder / "scenario_state.json"
    state = json.loads(path.read_text(encoding="utf-8"))
    state["request_states"][0]["annotations"]["medi_qa"]["gpt"]["accuracy"]["score"] = 1
    path.write_text(json.dumps(state), encoding="utf-8")
    return folder


def import_helm_inline(study, coordinator, capture):
    with capture(execute=True):
        job = start(study, coordinator, pack_helm_run(HELM_RUN), file_format="helm", name=HELM_NAME)
    job.refresh_from_db()
    return job


def test_an_inline_helm_import_also_imports_the_jury_verdicts(
    study, coordinator, django_capture_on_commit_callbacks
):
    job = import_helm_inline(study, coordinator, django_capture_on_commit_callbacks)

    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert judge_scores(study) == 27


def test_a_step_that_is_not_known_marks_the_job_failed(
    study, coordinator, settings, django_capture_on_commit_callbacks, client
):
    settings.MEDHELM_AFTER_IMPORT_TASKS = ["nowhere.no_such_task"]

    job = import_helm_inline(study, coordinator, django_capture_on_commit_callbacks)

    assert job.status == ImportJob.Status.FAILED
    assert job.created_items == 4 and Item.objects.filter(study=study).count() == 4
    progress = imports.import_progress(job)
    assert progress["step_errors"] == [
        {"where": "after import: nowhere.no_such_task", "reason": "no task of this name is known"}
    ]
    client.force_login(coordinator)
    page = client.get(reverse("annotation:import", args=[study.pk]) + f"?job={job.pk}")
    text = page.content.decode()
    assert "nowhere.no_such_task" in text and "no task of this name is known" in text
    assert "4 items were imported" in text and "Nothing was imported" not in text


def test_a_step_that_fails_marks_the_job_failed(
    study, coordinator, settings, django_capture_on_commit_callbacks
):
    settings.MEDHELM_AFTER_IMPORT_TASKS = [FAILING_STEP]

    job = import_helm_inline(study, coordinator, django_capture_on_commit_callbacks)

    assert job.status == ImportJob.Status.FAILED
    [error] = imports.import_progress(job)["step_errors"]
    assert error["where"] == f"after import: {FAILING_STEP}"
    assert "RuntimeError" in error["reason"] and "the step broke" in error["reason"]


def test_a_jury_verdict_conflict_marks_the_job_failed(
    study, coordinator, django_capture_on_commit_callbacks, tmp_path
):
    first = import_helm_inline(study, coordinator, django_capture_on_commit_callbacks)
    assert first.status == ImportJob.Status.SUCCEEDED
    # The same run once more, as a zip with one verdict changed: the items are unchanged, the
    # verdicts conflict with the stored ones.
    changed = changed_run(tmp_path)
    with django_capture_on_commit_callbacks(execute=True):
        job = start(study, coordinator, pack_helm_run(changed), file_format="helm", name=HELM_NAME)
    job.refresh_from_db()

    assert job.status == ImportJob.Status.FAILED
    assert job.unchanged_items == 4
    [error] = imports.import_progress(job)["step_errors"]
    assert error["where"] == f"after import: {VERDICTS}"
    assert "request_states[0].annotations.medi_qa.gpt.accuracy" in error["reason"]


def test_a_step_that_cannot_be_sent_marks_the_job_failed(study, coordinator, monkeypatch):
    def broker_down(*args, **kwargs):
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr(after_import.current_app, "send_task", broker_down)
    job = start(study, coordinator, pack_helm_run(HELM_RUN), file_format="helm", name=HELM_NAME)
    assert job.status == ImportJob.Status.SUCCEEDED  # the item import itself, inline
    after_import.run_after_import_steps(job_id=job.pk, inline=False)
    job.refresh_from_db()

    assert job.status == ImportJob.Status.FAILED
    [error] = imports.import_progress(job)["step_errors"]
    assert error["where"] == f"after import: {VERDICTS}"
    assert "could not be sent" in error["reason"] and "broker unreachable" in error["reason"]


def test_a_sent_step_that_fails_in_celery_marks_the_job_failed(
    study, coordinator, settings, monkeypatch
):
    """The step is sent with an errback that records its failure. Here the sent message is
    run in this process, through Celery's own tracing; test_after_import_worker.py runs it in
    a real worker."""
    settings.MEDHELM_AFTER_IMPORT_TASKS = [FAILING_STEP]
    sent = []
    monkeypatch.setattr(
        after_import.current_app, "send_task", lambda name, **options: sent.append((name, options))
    )
    job = start(study, coordinator, pack_helm_run(HELM_RUN), file_format="helm", name=HELM_NAME)
    after_import.run_after_import_steps(job_id=job.pk, inline=False)
    [(name, options)] = sent
    job.refresh_from_db()
    assert (name, job.status) == (FAILING_STEP, ImportJob.Status.SUCCEEDED)

    after_import.current_app.tasks[name].apply(
        args=options["args"], link_error=options["link_error"]
    )
    job.refresh_from_db()

    assert job.status == ImportJob.Status.FAILED
    [error] = imports.import_progress(job)["step_errors"]
    assert error["where"] == f"after import: {FAILING_STEP}"
    assert "the step broke" in error["reason"]


def test_a_tasks_module_that_does_not_import_marks_the_job_failed(
    study, coordinator, monkeypatch, settings
):
    def broken(*args, **kwargs):
        raise ImportError("cannot import name 'x' from 'someapp.tasks'")

    monkeypatch.setattr(after_import.current_app, "autodiscover_tasks", broken)
    settings.MEDHELM_AFTER_IMPORT_TASKS = ["someapp.step"]
    job = start(study, coordinator, pack_helm_run(HELM_RUN), file_format="helm", name=HELM_NAME)

    after_import.run_after_import_steps(job_id=job.pk, inline=True)
    job.refresh_from_db()

    assert job.status == ImportJob.Status.FAILED
    [error] = imports.import_progress(job)["step_errors"]
    assert error == {
        "where": "after import: someapp.step",
        "reason": "ImportError: cannot import name 'x' from 'someapp.tasks'",
    }


def test_a_helm_upload_gone_before_its_verdicts_marks_the_job_failed(
    study, coordinator, media_root
):
    job = start(study, coordinator, pack_helm_run(HELM_RUN), file_format="helm", name=HELM_NAME)
    (media_root / job.source_path).unlink()

    after_import.run_after_import_steps(job_id=job.pk, inline=True)
    job.refresh_from_db()

    assert job.status == ImportJob.Status.FAILED
    [error] = imports.import_progress(job)["step_errors"]
    assert error["where"] == f"after import: {VERDICTS}"
    assert error["reason"] == f"the uploaded file is missing from storage ({job.source_path})"
    assert judge_scores(study) == 0
