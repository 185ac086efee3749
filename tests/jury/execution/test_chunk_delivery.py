"""A chunk delivered more than once, or meeting calls others answered or hold: the cache,
a second delivery, another worker's claim, a cancelled run, and how runs are sent in chunks."""

from __future__ import annotations

import time

import pytest

from jury import execution, limits, services
from jury.models import JudgeScore
from tests.jury.factories import call_ids, make_judge
from tests.support.threads import in_background

pytestmark = [pytest.mark.redis, pytest.mark.usefixtures("chunk_limits")]


def test_identical_requests_are_served_from_the_cache(study, fake_provider):
    judge = make_judge(fake_provider)
    first = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    execution.execute_calls(call_ids=call_ids(first))
    second = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    assert execution.execute_calls(call_ids=call_ids(second)) == {"pending": 0, "ok": 4}
    assert fake_provider.total_requests == 4
    for c in second.calls.all():
        assert c.cached_from_id and c.cost == 0 and c.scores.filter(is_valid=True).count() == 3
    second.refresh_from_db()
    assert second.status == "finished"
    assert JudgeScore.objects.filter(call__run=second).count() == 12


def test_a_chunk_delivered_twice_changes_nothing(study, fake_provider):
    judge = make_judge(fake_provider)
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    execution.execute_calls(call_ids=call_ids(run))
    assert execution.execute_calls(call_ids=call_ids(run)) == {"pending": 0}
    assert fake_provider.total_requests == 4


def test_a_call_another_live_worker_holds_is_waited_for(study, fake_provider):
    """Another worker claimed one call and then died: the chunk runs the others at once and
    that one as soon as the claim lapses; nothing is asked twice."""
    judge = make_judge(fake_provider)
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    ids = call_ids(run)
    other = limits.RedisLimiter(limits.redis_url(), limits.key_prefix())
    assert other.claim(claimant=other.claimant("chunk"), call_ids=[ids[0]]) == {ids[0]}

    def die() -> None:
        time.sleep(0.5)
        other.stop()  # no release: its heartbeat ends and its owner key lapses (at once)

    with in_background(die):
        counts = execution.execute_calls(call_ids=ids)
    assert counts == {"pending": 0, "ok": 4}
    assert fake_provider.total_requests == 4


def test_a_cancelled_run_leaves_its_calls_pending(study, fake_provider):
    judge = make_judge(fake_provider)
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    services.cancel_run(run=run, actor=None)
    assert execution.execute_calls(call_ids=call_ids(run)) == {"pending": 4}
    assert fake_provider.total_requests == 0
    assert services.resume_run(run=run, actor=None, dispatch=False) == 4
    assert execution.execute_calls(call_ids=call_ids(run)) == {"pending": 0, "ok": 4}
    run.refresh_from_db()
    assert run.status == "finished"


def test_a_run_is_sent_in_chunks_when_the_limits_live_in_redis(
    study, fake_provider, monkeypatch, django_capture_on_commit_callbacks
):
    sent: list[list[int]] = []

    def send_task(name, args):
        assert name == "jury.execute_judge_calls"
        sent.append(*args)

    monkeypatch.setattr(services.current_app, "send_task", send_task)
    monkeypatch.setattr(services, "CALLS_PER_TASK", 3)
    judges = [make_judge(fake_provider, name="gpt"), make_judge(fake_provider, name="gpt-2")]
    with django_capture_on_commit_callbacks(execute=True):
        run = services.start_run(study=study, judges=judges, actor=None)
    ids = sorted(call_ids(run))
    assert sorted(i for chunk in sent for i in chunk) == ids  # 4 items, 2 judges: 8 calls
    assert [len(chunk) for chunk in sent] == [3, 3, 2]
