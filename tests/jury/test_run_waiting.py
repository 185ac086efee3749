"""A run whose pending calls no worker holds says so, on its page and in run_jury, instead
of an ETA and "N left" forever; run_jury stops watching once the sweep should have ended
them."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from jury import services
from jury.models import JudgeCall, JudgeLease, JuryRun
from tests.factories import make_study_with_members
from tests.jury.factories import make_judge


@pytest.fixture
def setup(db, settings, fake_provider):
    """A running run of 3 calls: one ok, two pending, sent an hour ago, swept twice."""
    settings.JURY_LIMITER = "database"
    setup = make_study_with_members(n_items=3, n_clinicians=2, k=2)
    run = services.start_run(
        study=setup.study, judges=[make_judge(fake_provider)], actor=None, dispatch=False
    )
    an_hour_ago = timezone.now() - timedelta(hours=1)
    JuryRun.objects.filter(pk=run.pk).update(status="running", started_at=an_hour_ago)
    run.calls.update(dispatched_at=an_hour_ago, sweeps=2)
    first = run.calls.order_by("pk").first()
    JudgeCall.objects.filter(pk=first.pk).update(status="ok", finished_at=an_hour_ago)
    setup.run = run
    setup.since = timezone.localtime(an_hour_ago).strftime("%H:%M")
    return setup


def test_the_run_page_says_calls_wait_for_a_worker_instead_of_an_eta(client, setup):
    client.force_login(setup.coordinator)
    url = f"/studies/{setup.study.pk}/jury/runs/{setup.run.pk}/"
    page = client.get(url).content.decode()
    assert f"2 calls waiting for a worker since {setup.since}; re-dispatched 2 times" in page
    assert " s left" not in page
    # A worker holds one of them: the run is being worked on.
    held = setup.run.calls.filter(status="pending").first()
    JudgeLease.objects.create(
        judge=held.judge, call=held, expires_at=timezone.now() + timedelta(minutes=5)
    )
    status = client.get(url + "status.json").json()
    assert status["waiting"] == "" and status["eta_state"] != "waiting"
    # Its last call ended an hour ago: no pace to go by, so no number (never a growing one).
    assert status["eta_text"] == "time left: estimating…"


def test_run_jury_says_so_and_stops_watching_a_run_the_sweep_should_have_ended(setup, settings):
    settings.JURY_SWEEP_INTERVAL_SECONDS = 1
    settings.JURY_SWEEP_GRACE_SECONDS = 1
    settings.JURY_SWEEP_MAX_REDISPATCHES = 2
    out = io.StringIO()
    call_command("run_jury", watch=setup.run.pk, stdout=out)
    text = out.getvalue()
    waiting = f"2 calls waiting for a worker since {setup.since}; re-dispatched 2 times"
    assert f"1/3 done, 0 failed, {waiting}" in text
    assert "2 left" not in text
    assert f"Run {setup.run.pk} stalled: {waiting}" in text
    assert "Is a Celery worker with beat running?" in text
