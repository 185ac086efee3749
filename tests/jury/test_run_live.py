"""The run page follows its run without reloading: a JSON status it polls, a time left from
the pace of recent finishes that never grows while nothing finishes, Resume only for a
stopped or failed run, and filters picked from lists."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from annotation.models import Item
from delphi.services import create_taxonomy_version
from jury import services
from jury.models import JudgeCall, JuryRun
from jury.run_estimate import estimate_remaining
from tests.factories import make_study_with_members
from tests.jury.factories import make_judge

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


# --- the estimate (pure) ------------------------------------------------------------------------


def test_the_estimate_is_pending_calls_times_the_recent_interval():
    finished = [at(0), at(10), at(20), at(30)]  # one call every 10 s
    estimate = estimate_remaining(finished_at=finished, pending=6, now=at(30))
    assert (estimate.state, estimate.seconds, estimate.rate_per_minute) == ("known", 60, 6)


def test_the_estimate_counts_down_and_never_grows_while_nothing_finishes():
    finished = [at(0), at(10), at(20), at(30)]
    seen = []
    for now in range(30, 200, 3):  # polled every 3 s, no call finishing
        estimate = estimate_remaining(finished_at=finished, pending=6, now=at(now))
        seen.append(estimate.seconds)
    numbers = [s for s in seen if s is not None]
    assert numbers == sorted(numbers, reverse=True) and numbers[0] == 60
    # Past the stall limit there is no number at all (not a growing one).
    assert seen[-1] is None
    late = estimate_remaining(finished_at=finished, pending=6, now=at(200))
    assert late.state == "estimating"


def test_no_pace_is_estimating_and_nothing_left_is_none():
    assert estimate_remaining(finished_at=[], pending=3, now=at(0)).state == "estimating"
    one_burst = [at(5), at(5), at(5)]  # finished together: no interval to measure
    assert estimate_remaining(finished_at=one_burst, pending=3, now=at(6)).state == "estimating"
    assert estimate_remaining(finished_at=[at(0), at(1)], pending=3, now=at(1)).state == (
        "estimating"
    )
    assert estimate_remaining(finished_at=[at(0)], pending=0, now=at(1)).state == "none"


def test_the_pace_is_read_from_recent_finishes_only():
    slow_start = [at(0), at(600)]  # long ago, one call in ten minutes
    fast_now = [at(1000), at(1001), at(1002), at(1003)]  # one a second now
    estimate = estimate_remaining(finished_at=slow_start + fast_now, pending=10, now=at(1003))
    assert estimate.seconds == pytest.approx(10)


# --- the status endpoint and the page -----------------------------------------------------------


@pytest.fixture
def setup(db, fake_provider, monkeypatch):
    monkeypatch.setenv("MEDHELM_JUDGE_KEY_FAKE", "sk-test")
    setup = make_study_with_members(n_items=4, n_clinicians=2, k=2)
    setup.judge = make_judge(fake_provider, name="gpt")
    run = services.start_run(study=setup.study, judges=[setup.judge], actor=None, dispatch=False)
    JuryRun.objects.filter(pk=run.pk).update(status="running", started_at=timezone.now())
    run.refresh_from_db()
    setup.run = run
    setup.page_url = f"/studies/{setup.study.pk}/jury/runs/{run.pk}/"
    setup.status_url = setup.page_url + "status.json"
    return setup


def finish(run, n, *, status="ok", seconds_apart=2.0):
    """Mark `n` pending calls ended, the last one now, `seconds_apart` between them."""
    now = timezone.now()
    calls = list(run.calls.filter(status="pending").order_by("pk")[:n])
    for i, call in enumerate(calls):
        JudgeCall.objects.filter(pk=call.pk).update(
            status=status, finished_at=now - timedelta(seconds=seconds_apart * (n - 1 - i))
        )


def test_the_status_json_has_counts_state_and_time_left(client, setup):
    client.force_login(setup.coordinator)
    data = client.get(setup.status_url).json()
    assert (data["status"], data["live"], data["done"], data["remaining"]) == (
        "running",
        True,
        0,
        4,
    )
    assert (data["eta_state"], data["eta_text"]) == ("estimating", "time left: estimating…")
    finish(setup.run, 3)
    data = client.get(setup.status_url).json()
    assert (data["done"], data["ok"], data["remaining"], data["percent"]) == (3, 3, 1, 75)
    assert data["eta_state"] == "known" and 0 < data["eta_seconds"] <= 2
    assert data["eta_text"].endswith(" s left")
    assert (data["can_cancel"], data["can_resume"]) == (True, False)
    assert data["judges"] == [
        {
            "judge": "gpt",
            "total": 4,
            "by_status": ["ok 3", "pending 1"],
            "failure_rate": "0%",
            "mean_latency": "\u2013",
            "cost": "$0.0000",
        }
    ]


def test_who_may_read_the_status(client, setup):
    client.force_login(setup.researcher)
    assert client.get(setup.status_url).status_code == 200
    client.force_login(setup.clinicians[0])
    assert client.get(setup.status_url).status_code == 403
    client.force_login(setup.outsider)
    assert client.get(setup.status_url).status_code == 404


def test_the_page_does_not_reload_itself_and_polls_instead(client, setup):
    client.force_login(setup.coordinator)
    page = client.get(setup.page_url).content.decode()
    assert 'http-equiv="refresh"' not in page
    assert f'data-status-url="{setup.status_url}"' in page and "jury/run-live.js" in page


def resume_hidden(client, setup) -> bool:
    page = client.get(setup.page_url).content.decode()
    form = page[page.index('data-show="can_resume"') :].split(">", 1)[0]
    return " hidden" in form


@pytest.mark.parametrize(
    ("status", "call_status", "offered"),
    [
        ("queued", "pending", False),
        ("running", "pending", False),
        ("finished", "ok", False),
        ("finished", "provider_error", True),
        ("finished", "timeout", True),
        ("cancelled", "pending", True),
        ("failed", "pending", True),
    ],
)
def test_resume_is_offered_only_for_a_stopped_or_failed_run(
    client, setup, status, call_status, offered
):
    setup.run.calls.update(status=call_status)
    JuryRun.objects.filter(pk=setup.run.pk).update(status=status)
    client.force_login(setup.coordinator)
    assert client.get(setup.status_url).json()["can_resume"] is offered
    assert resume_hidden(client, setup) is not offered


# --- filters from lists --------------------------------------------------------------------------


@pytest.fixture
def filed(setup):
    """Two models; two items of each filed under a task of a small taxonomy."""
    version = create_taxonomy_version(
        tree={
            "name": "Tiny",
            "categories": [
                {
                    "name": "Clinical Decision Support",
                    "subcategories": [{"name": "Planning", "tasks": ["Treatment QA", "Dosing"]}],
                }
            ],
        },
        source="manual",
    )
    task = version.nodes.get(name="Dosing")
    items = list(setup.study.items.order_by("pk"))
    Item.objects.filter(pk__in=[i.pk for i in items[2:]]).update(model_name="model-b")
    Item.objects.filter(pk__in=[items[1].pk, items[3].pk]).update(taxonomy_node=task)
    setup.task = task
    return setup


def test_the_run_form_lists_the_studys_models_and_taxonomy_nodes(client, filed):
    client.force_login(filed.coordinator)
    page = client.get(f"/studies/{filed.study.pk}/jury/").content.decode()
    assert 'type="checkbox" name="models" value="model-a"' in page
    assert "model-b (2 items)" in page
    assert f'<option value="{filed.task.pk}">' in page
    assert "Clinical Decision Support / Planning / Dosing (2 items)" in page
    assert "Treatment QA" not in page  # no item is filed under it
    assert (
        'name="models" type="text"' not in page and 'type="number" name="taxonomy_node"' not in page
    )


def test_a_run_starts_on_the_picked_model_and_node(client, filed):
    client.force_login(filed.coordinator)
    url = f"/studies/{filed.study.pk}/jury/"
    response = client.post(
        url, {"judges": [filed.judge.pk], "models": ["model-b"], "taxonomy_node": filed.task.pk}
    )
    assert response.status_code == 302
    run = JuryRun.objects.exclude(pk=filed.run.pk).get()
    assert run.filters == {"models": ["model-b"], "taxonomy_node": filed.task.pk}
    assert run.calls.count() == 1  # model-b and Dosing: one item


def test_a_model_or_node_not_offered_is_refused_on_the_form(client, filed):
    client.force_login(filed.coordinator)
    url = f"/studies/{filed.study.pk}/jury/"
    before = JuryRun.objects.count()
    for data in ({"models": ["no-such-model"]}, {"taxonomy_node": 987654}):
        page = client.post(url, {"judges": [filed.judge.pk], **data})
        assert page.status_code == 200 and "Select a valid choice" in page.content.decode()
    assert JuryRun.objects.count() == before
