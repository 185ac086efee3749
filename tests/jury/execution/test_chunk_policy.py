"""A chunk on the worker's event loop sends nothing for a judge the operator's rules refuse
(a key variable or an endpoint host not allowed), and fails its calls with the reason."""

from __future__ import annotations

import pytest

from jury import execution
from tests.jury.factories import call_ids, make_judge, one_item_run

pytestmark = [pytest.mark.redis, pytest.mark.usefixtures("chunk_limits")]


def test_a_chunk_of_a_refused_judge_sends_nothing(study, fake_provider, monkeypatch, settings):
    monkeypatch.setenv("SECRET_KEY", "the-site-secret-key-value")
    allowed = make_judge(fake_provider, name="allowed")
    stolen_key = make_judge(fake_provider, name="stolen-key", api_key_env="SECRET_KEY")
    runs = [one_item_run(study, allowed), one_item_run(study, stolen_key)]
    counts = execution.execute_calls(call_ids=[i for run in runs for i in call_ids(run)])
    assert counts == {"pending": 0, "ok": 1, "provider_error": 1}
    assert fake_provider.total_requests == 1
    assert {r.headers["authorization"] for r in fake_provider.requests} == {
        "Bearer sk-test-not-a-secret"
    }
    call = runs[1].calls.get()
    assert (call.status, call.attempts) == ("provider_error", 0)
    assert "not allowed" in call.error and "SECRET_KEY" in call.error
    assert "the-site-secret-key-value" not in call.error
    runs[1].refresh_from_db()
    assert runs[1].status == "finished"

    settings.JURY_ALLOWED_HOSTS = ["api.openai.com"]  # the fake's loopback host no longer
    again = one_item_run(study, make_judge(fake_provider, name="moved"))
    counts = execution.execute_calls(call_ids=call_ids(again))
    assert counts == {"pending": 0, "provider_error": 1}
    assert fake_provider.total_requests == 1
    assert "127.0.0.1" in again.calls.get().error
