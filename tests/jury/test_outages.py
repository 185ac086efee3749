"""A provider that goes away (the per-call path, database limiter): its calls pause without
spending attempts and all end ok when it is back; the run page and `run_jury` say "provider
unreachable since ..." while it lasts; an outage longer than the judge's retry budget ends
the calls with that reason; a timed-out call keeps the time it cost."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from jury import services
from jury.execution import execute_call
from jury.models import JuryRun
from tests.factories import make_study_with_members
from tests.jury.factories import make_judge, one_item_run
from tests.support.processes import wait_for
from tests.support.threads import Threads, drain_in_threads, in_background

OUTAGE_TEXT = "provider unreachable since"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("MEDHELM_JUDGE_KEY_FAKE", "sk-test-not-a-secret")


@pytest.fixture
def quick_breaker(settings):
    """Two refused requests pause an endpoint; a probe every 0.3 s."""
    settings.JURY_LIMITER = "database"
    settings.JURY_BREAKER_THRESHOLD = 2
    settings.JURY_BREAKER_PROBE_SECONDS = 0.3


def run_in_threads(run: JuryRun, n_threads: int = 2) -> Threads:
    """Execute the run's calls in worker threads, started now; `join()` them."""
    ids = list(run.calls.order_by("pk").values_list("pk", flat=True))
    return drain_in_threads(ids, lambda call_id: execute_call(call_id=call_id), threads=n_threads)


def run_page(client, setup, run: JuryRun) -> str:
    return client.get(f"/studies/{setup.study.pk}/jury/runs/{run.pk}/").content.decode()


@pytest.mark.django_db(transaction=True)
def test_an_outage_pauses_the_calls_and_they_all_end_ok(client, fake_provider, quick_breaker):
    setup = make_study_with_members(n_items=6, n_clinicians=2, k=2)
    # Two attempts each: without the pause every call would fail during the outage.
    judge = make_judge(fake_provider, max_concurrency=2, params={"max_attempts": 2})
    run = services.start_run(study=setup.study, judges=[judge], actor=None, dispatch=False)
    client.force_login(setup.coordinator)
    fake_provider.stop()  # connections refused from the start
    workers = run_in_threads(run)
    watched = io.StringIO()
    with in_background(lambda: call_command("run_jury", watch=run.pk, stdout=watched)):
        wait_for(
            lambda: OUTAGE_TEXT in run_page(client, setup, run), 30, "the page to show the outage"
        )
        assert judge.name in run_page(client, setup, run)
        wait_for(lambda: OUTAGE_TEXT in watched.getvalue(), 30, "run_jury to print the outage")
        fake_provider.start()  # back, on the same port
        workers.join(timeout=120)
    assert set(run.calls.values_list("status", flat=True)) == {"ok"}
    assert fake_provider.total_requests == 6  # once back, each call was answered once
    run.refresh_from_db()
    assert run.status == "finished" and OUTAGE_TEXT not in run_page(client, setup, run)
    output = watched.getvalue()
    assert f"{judge.name}: {OUTAGE_TEXT}" in output
    assert f"{judge.name}: provider reachable again" in output


@pytest.mark.django_db(transaction=True)
def test_an_outage_longer_than_the_retry_budget_ends_the_calls_with_the_reason(
    fake_provider, quick_breaker
):
    study = make_study_with_members(n_items=4, n_clinicians=2, k=2).study
    judge = make_judge(fake_provider, max_concurrency=2, retry_budget_seconds=2)
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    fake_provider.stop()
    run_in_threads(run).join(timeout=120)
    calls = list(run.calls.all())
    assert {c.status for c in calls} == {"provider_error"}
    for call in calls:
        assert OUTAGE_TEXT in call.error and "connection failed" in call.error, call.error
    run.refresh_from_db()
    assert run.status == "finished"


@pytest.mark.django_db
def test_a_timed_out_call_keeps_the_time_its_requests_took(fake_provider):
    study = make_study_with_members(n_items=1, n_clinicians=1, k=1).study
    judge = make_judge(fake_provider, timeout_seconds=0.5, params={"max_attempts": 2})
    run = one_item_run(study, judge)
    fake_provider.enqueue("timeout", "timeout")
    assert execute_call(call_id=run.calls.get().pk, sleep=lambda s: None) == "timeout"
    call = run.calls.get()
    assert call.attempts == 2 and call.latency_ms is not None and call.latency_ms >= 1000
