"""Metric jobs: computing ROUGE-L and BERTScore in a worker as a job the pages show (queued,
running, done with its counts, failed with its reason, queued too long), started by a
coordinator from the jury page or a report's status panel."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from celery import Celery
from django.utils import timezone

from annotation import services as annotation_services
from annotation.models import AuditEvent
from jury import metric_jobs
from jury.errors import JuryError
from jury.models import MetricJob, MetricScore
from tests.factories import make_study_with_members
from tests.jury.metrics.samples import PARAPHRASE, REF, UNRELATED


@pytest.fixture
def setup(db):
    setup = make_study_with_members(n_items=0, n_clinicians=1, k=1)
    annotation_services.create_items(
        study=setup.study,
        rows=[
            annotation_services.ItemRow(
                external_id=ext,
                input_text="Question?",
                reference_text=ref,
                output_text=out,
                model_name="model-a",
            )
            for ext, ref, out in [("c1", REF, PARAPHRASE), ("c2", REF, UNRELATED), ("c3", "", "x")]
        ],
        actor=setup.coordinator,
    )
    return setup


def _states(study) -> dict[str, metric_jobs.MetricState]:
    return {s.metric: s for s in metric_jobs.metric_states(study=study)}


def test_a_job_is_sent_after_commit_and_ends_done_with_its_counts(
    setup, rouge_ready, django_capture_on_commit_callbacks, monkeypatch
):
    sent = []
    monkeypatch.setattr(
        metric_jobs.current_app, "send_task", lambda name, args, kwargs: sent.append(kwargs)
    )
    study = setup.study
    assert _states(study)["rouge_l_f1"].summary == "never started"
    with django_capture_on_commit_callbacks(execute=True):
        job = metric_jobs.start_metric_job(
            study=study, actor=setup.coordinator, metrics=["rouge_l_f1"]
        )
        assert sent == []
    assert sent == [{"job_id": job.pk}]
    assert job.status == MetricJob.Status.QUEUED
    assert _states(study)["rouge_l_f1"].summary.startswith("queued since")
    assert AuditEvent.objects.filter(action="metrics.start", study=study).count() == 1

    answer = metric_jobs.run_metric_job(job.pk)
    job.refresh_from_db()
    assert answer["status"] == "done" and job.status == MetricJob.Status.DONE
    assert job.counts["metrics"]["rouge_l_f1"]["scored"] == 2
    assert job.started_at and job.finished_at >= job.started_at
    rouge = _states(study)["rouge_l_f1"]
    assert (rouge.done, rouge.total, rouge.startable) == (2, 2, False)
    assert rouge.summary.startswith("done ")
    # BERTScore was never started: still offered
    assert _states(study)["bertscore_f1"].startable
    # delivered twice: the second delivery finds the job ended and does nothing
    assert metric_jobs.run_metric_job(job.pk) == {"job": job.pk, "status": "done"}


def test_a_job_that_cannot_load_its_model_fails_with_the_reason(setup, tmp_path):
    study = setup.study
    job = metric_jobs.start_metric_job(
        study=study,
        actor=None,
        metrics=["bertscore_f1"],
        params={"model_dir": str(tmp_path)},  # an empty folder, no model in it
    )
    answer = metric_jobs.run_metric_job(job.pk)
    job.refresh_from_db()
    assert answer["status"] == "failed" and job.status == MetricJob.Status.FAILED
    assert str(tmp_path) in job.error and "config.json" in job.error
    bert = _states(study)["bertscore_f1"]
    assert bert.summary.startswith("failed ") and str(tmp_path) in bert.summary
    assert bert.startable  # offered again
    assert not MetricScore.objects.filter(item__study=study).exists()


def test_a_second_start_while_one_is_active_is_refused_by_name(setup):
    study = setup.study
    metric_jobs.start_metric_job(study=study, actor=None, metrics=["rouge_l_f1"])
    with pytest.raises(JuryError, match="ROUGE-L F1 already queued since") as caught:
        metric_jobs.start_metric_job(study=study, actor=None)
    assert caught.value.field == "metrics"
    # another metric alone may start beside it
    metric_jobs.start_metric_job(study=study, actor=None, metrics=["bertscore_f1"])
    assert MetricJob.objects.filter(study=study).count() == 2
    with pytest.raises(JuryError, match="unknown metrics"):
        metric_jobs.start_metric_job(study=study, actor=None, metrics=["bleu"])


def test_a_job_no_worker_takes_says_so(setup):
    study = setup.study
    job = metric_jobs.start_metric_job(study=study, actor=None, metrics=["rouge_l_f1"])
    soon = job.created_at + timedelta(minutes=2)
    late = job.created_at + metric_jobs.STALE_QUEUED + timedelta(seconds=1)
    assert not {s.metric: s for s in metric_jobs.metric_states(study=study, now=soon)}[
        "rouge_l_f1"
    ].stale
    stale = {s.metric: s for s in metric_jobs.metric_states(study=study, now=late)}["rouge_l_f1"]
    assert stale.stale and "not taken by any worker" in stale.summary


def test_a_job_whose_worker_stopped_can_be_started_again(setup):
    study = setup.study
    job = metric_jobs.start_metric_job(study=study, actor=None, metrics=["rouge_l_f1"])
    long_ago = timezone.now() - metric_jobs.STALE_RUNNING - timedelta(minutes=1)
    MetricJob.objects.filter(pk=job.pk).update(status=MetricJob.Status.RUNNING, started_at=long_ago)
    rouge = _states(study)["rouge_l_f1"]
    assert rouge.stale and rouge.startable and "no end recorded" in rouge.summary
    again = metric_jobs.start_metric_job(study=study, actor=None, metrics=["rouge_l_f1"])
    job.refresh_from_db()
    assert job.status == MetricJob.Status.FAILED and "started again" in job.error
    assert _states(study)["rouge_l_f1"].job_status == MetricJob.Status.QUEUED
    assert again.pk != job.pk


def test_coordinators_start_metrics_from_the_report_panel(setup, client, monkeypatch):
    from agreement import services as agreement_services

    monkeypatch.setattr(
        metric_jobs.current_app, "send_task", lambda name, args, kwargs: None
    )  # no broker here: the job stays queued, as it would before a worker takes it
    study = setup.study
    snapshot = agreement_services.create_snapshot(
        study=study, actor=None, parameters={"n_resamples": 20, "seed": 1}
    )
    report = f"/studies/{study.pk}/agreement/{snapshot.pk}/"
    panel_url = f"{report}machine-status/"
    client.force_login(setup.coordinator)
    panel = client.get(panel_url).content.decode()
    assert 'data-testid="start-metrics"' in panel
    assert "Compute ROUGE-L F1 and BERTScore F1" in panel
    answer = client.post(
        f"/studies/{study.pk}/jury/metrics/start/",
        {"metric": ["rouge_l_f1", "bertscore_f1"], "next": report},
        follow=True,
    )
    assert answer.redirect_chain[-1][0] == report
    assert "queued: a worker on the metrics queue computes them" in answer.content.decode()
    job = MetricJob.objects.get(study=study)
    assert job.created_by == setup.coordinator and job.metrics == ["rouge_l_f1", "bertscore_f1"]
    panel = client.get(panel_url).content.decode()
    assert 'data-testid="start-metrics"' not in panel and panel.count("queued since") == 2
    # a second click (another tab) is refused with the reason, nothing queued twice
    again = client.post(
        f"/studies/{study.pk}/jury/metrics/start/",
        {"metric": ["rouge_l_f1", "bertscore_f1"], "next": report},
        follow=True,
    )
    assert "Metrics not started: ROUGE-L F1, BERTScore F1 already queued" in again.content.decode()
    assert MetricJob.objects.filter(study=study).count() == 1
    none = client.post(f"/studies/{study.pk}/jury/metrics/start/", {"next": report}, follow=True)
    assert "Metrics not started: no metric chosen; choose from rouge_l_f1" in none.content.decode()
    # a "next" off the site goes back to the jury page instead
    MetricJob.objects.update(status=MetricJob.Status.FAILED, finished_at=timezone.now())
    off = client.post(
        f"/studies/{study.pk}/jury/metrics/start/",
        {"metric": ["rouge_l_f1"], "next": "https://evil.example/"},
    )
    assert off["Location"] == f"/studies/{study.pk}/jury/"


def test_only_coordinators_start_metrics(setup, client):
    study = setup.study
    client.force_login(setup.clinicians[0])
    answer = client.post(f"/studies/{study.pk}/jury/metrics/start/", {"metric": ["rouge_l_f1"]})
    assert answer.status_code in (403, 404)
    assert not MetricJob.objects.exists()


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_started_job_is_computed_by_a_real_worker(tmp_path, rouge_ready, monkeypatch):
    from tests.support.celery_worker import running_worker

    setup = make_study_with_members(n_items=0, n_clinicians=1, k=1)
    annotation_services.create_items(
        study=setup.study,
        rows=[
            annotation_services.ItemRow(
                external_id="c1",
                input_text="Q?",
                reference_text=REF,
                output_text=PARAPHRASE,
                model_name="model-a",
            )
        ],
        actor=setup.coordinator,
    )
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("CELERY_RESULT_BACKEND", raising=False)
    broker = f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}"
    backend = f"db+sqlite:///{tmp_path / 'results.sqlite3'}"
    # the job is sent by name: an app of the test's own on the worker's broker sends it there
    monkeypatch.setattr(
        metric_jobs, "current_app", Celery("test-sender", broker=broker, set_as_current=False)
    )
    log = tmp_path / "worker.log"
    with running_worker(broker_url=broker, result_backend=backend, log_path=log):
        job = metric_jobs.start_metric_job(
            study=setup.study, actor=setup.coordinator, metrics=["rouge_l_f1"]
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            job.refresh_from_db()
            if job.status in (MetricJob.Status.DONE, MetricJob.Status.FAILED):
                break
            time.sleep(0.5)
    assert job.status == MetricJob.Status.DONE, (job.error, log.read_text()[-3000:])
    assert MetricScore.objects.filter(item__study=setup.study, metric="rouge_l_f1").count() == 1
