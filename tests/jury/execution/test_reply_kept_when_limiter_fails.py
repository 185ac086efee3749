"""A reply in hand is kept when the limiter or breaker store fails right after the request
(its Redis restarting): the call is answered, not left pending for the sweep to ask, and pay
for, again."""

from __future__ import annotations

import pytest
import redis

from jury import execution, services
from jury.breakers.boards import AsyncBoard, Board
from jury.execution.engine import Gate
from tests.jury.factories import call_ids, make_judge
from tests.support.attempts import assert_rows_are_the_requests

pytestmark = [pytest.mark.redis, pytest.mark.usefixtures("chunk_limits")]


def test_a_reply_is_kept_when_giving_back_the_slot_and_recording_fail(
    study, fake_provider, monkeypatch
):
    judge = make_judge(fake_provider)
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)

    async def unreachable(*_args, **_kwargs):
        raise redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1. Refused.")

    monkeypatch.setattr(Gate, "give_back", unreachable)
    monkeypatch.setattr(AsyncBoard, "record", unreachable)
    n = run.calls.count()

    assert execution.execute_calls(call_ids=call_ids(run)) == {"pending": 0, "ok": n}
    assert fake_provider.total_requests == n
    assert_rows_are_the_requests(run, fake_provider)


def test_the_per_call_path_keeps_a_reply_when_recording_it_fails(study, fake_provider, monkeypatch):
    judge = make_judge(fake_provider)
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)

    def unreachable(*_args, **_kwargs):
        raise redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1. Refused.")

    monkeypatch.setattr(Board, "record", unreachable)
    ids = call_ids(run)

    assert [execution.execute_call(call_id=i) for i in ids] == ["ok"] * len(ids)
    assert fake_provider.total_requests == len(ids)
    assert_rows_are_the_requests(run, fake_provider)
