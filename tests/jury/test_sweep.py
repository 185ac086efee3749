"""The sweep on the database limiter: orphaned pending calls are sent again, a call no
worker takes ends with a visible reason after the set number of re-dispatches, calls a
worker holds (or a jury still working) are left alone, and a run with nothing pending left
is marked finished."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jury import services
from jury.execution.sweep import sweep_calls
from jury.models import JudgeCall, JudgeLease, JuryRun
from medhelm_site.common import task_names
from tests.factories import make_study_with_members
from tests.jury.factories import make_judge

GRACE = 60.0


@pytest.fixture
def sent(settings, monkeypatch) -> list[tuple[str, list]]:
    """The database limiter, a grace of 60 s, 2 re-dispatches at most; the tasks sent to
    the broker are recorded instead."""
    settings.JURY_LIMITER = "database"
    settings.JURY_SWEEP_GRACE_SECONDS = GRACE
    settings.JURY_SWEEP_MAX_REDISPATCHES = 2
    tasks: list[tuple[str, list]] = []
    monkeypatch.setattr(
        services.current_app, "send_task", lambda name, args: tasks.append((name, args))
    )
    return tasks


@pytest.fixture
def run(db, fake_provider) -> JuryRun:
    study = make_study_with_members(n_items=2, n_clinicians=2, k=2).study
    run = services.start_run(study=study, judges=[make_judge(fake_provider)], actor=None)
    JuryRun.objects.filter(pk=run.pk).update(status=JuryRun.Status.RUNNING)
    return run


def later(seconds: float):
    return timezone.now() + timedelta(seconds=seconds)


def test_orphans_are_sent_again_then_end_with_a_reason(sent, run):
    calls = sorted(run.calls.values_list("pk", flat=True))
    sent.clear()  # start_run's own dispatch (on commit)
    # Sent just now: not orphaned yet.
    assert sweep_calls(now=later(GRACE / 2)).redispatched == 0
    report = sweep_calls(now=later(GRACE + 1))
    assert report.redispatched == 2 and not report.busy
    assert sorted(args[0] for _, args in sent) == calls
    assert {name for name, _ in sent} == {task_names.EXECUTE_CALL}
    # just sent again: not yet; later, once more; then the bound
    assert sweep_calls(now=later(GRACE / 2)).redispatched == 0
    assert sweep_calls(now=later(GRACE + 1)).redispatched == 2
    report = sweep_calls(now=later(GRACE + 1))
    assert report.redispatched == 0 and report.failed == 2
    assert len(sent) == 4
    for call in run.calls.all():
        assert call.status == JudgeCall.Status.PROVIDER_ERROR
        assert "no worker could take this call after 2 re-dispatches" in call.error
    run.refresh_from_db()
    assert run.status == JuryRun.Status.FINISHED


def test_a_resume_gives_the_calls_their_full_count_again(sent, run):
    for _ in range(3):
        sweep_calls(now=later(GRACE + 1))
    assert run.calls.filter(status=JudgeCall.Status.PROVIDER_ERROR).count() == 2
    assert services.resume_run(run=run, actor=None) == 2
    assert set(run.calls.values_list("sweeps", flat=True)) == {0}
    assert sweep_calls(now=later(GRACE + 1)).redispatched == 2


def test_a_call_a_worker_holds_keeps_the_jury_busy(sent, run):
    held = run.calls.first()
    lease = JudgeLease.objects.create(judge=held.judge, call=held, expires_at=later(600))
    sent.clear()
    report = sweep_calls(now=later(GRACE + 1))
    assert report.busy and report.redispatched == 0 and sent == []
    # its worker died: the lease expired, the calls are orphans
    lease.expires_at = timezone.now() - timedelta(seconds=1)
    lease.save()
    assert sweep_calls(now=later(GRACE + 1)).redispatched == 2


def test_a_jury_that_ended_a_call_within_the_grace_is_left_alone(sent, run):
    done = run.calls.first()
    JudgeCall.objects.filter(pk=done.pk).update(
        status=JudgeCall.Status.OK, finished_at=later(GRACE / 2)
    )
    report = sweep_calls(now=later(GRACE + 1))
    assert report.busy and report.redispatched == 0


def test_a_cancelled_run_is_not_swept(sent, run):
    services.cancel_run(run=run, actor=None)
    assert sweep_calls(now=later(GRACE + 1)).redispatched == 0
    assert run.calls.filter(status=JudgeCall.Status.PENDING).count() == 2


def test_a_run_whose_last_worker_died_before_finishing_it_is_finished(sent, run):
    # Every call was saved, but the worker died before it marked the run finished.
    run.calls.update(status=JudgeCall.Status.OK, finished_at=timezone.now())
    assert sweep_calls().finished_runs == 1
    run.refresh_from_db()
    assert run.status == JuryRun.Status.FINISHED and run.finished_at is not None
