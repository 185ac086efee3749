"""The invariants of a run's attempt history: numbered without gaps, one answer per answered
call (any server), and, against the fake provider, one row per request it saw."""

from __future__ import annotations

from jury.models import JudgeAttempt, JuryRun
from tests.support.fake_provider import FakeProvider, prompt_key

ANSWERED = ("ok", "invalid_verdict")


def assert_history_intact(run: JuryRun) -> None:
    """Every call's attempts are numbered 1..n without gaps, n is the call's attempt count,
    and an answered call has exactly one answered attempt: its last."""
    for call in run.calls.all():
        numbers = list(call.attempt_log.order_by("number").values_list("number", "outcome"))
        assert [n for n, _ in numbers] == list(range(1, call.attempts + 1)), (call.pk, numbers)
        if call.status in ANSWERED:
            answered = [n for n, outcome in numbers if outcome in ANSWERED]
            assert answered == [call.attempts], (call.pk, numbers)


def assert_rows_are_the_requests(run: JuryRun, fake: FakeProvider) -> None:
    """Each call's attempt count is its rows, numbered from 1, and as many as the requests
    the provider saw for its prompt; all together, every request the provider saw."""
    assert_history_intact(run)
    for call in run.calls.all():
        assert call.attempts == fake.per_prompt_hash[prompt_key(call.prompt_text)], call
    assert JudgeAttempt.objects.filter(call__run=run).count() == fake.total_requests
