"""The invariant of a run's attempt history against the fake provider's counters."""

from __future__ import annotations

from jury.models import JudgeAttempt, JuryRun
from tests.support.fake_provider import FakeProvider, prompt_key


def assert_rows_are_the_requests(run: JuryRun, fake: FakeProvider) -> None:
    """Each call's attempt count is its rows, numbered from 1, and as many as the requests
    the provider saw for its prompt; all together, every request the provider saw."""
    for call in run.calls.all():
        numbers = list(call.attempt_log.order_by("number").values_list("number", flat=True))
        assert numbers == list(range(1, call.attempts + 1)), call
        assert call.attempts == fake.per_prompt_hash[prompt_key(call.prompt_text)], call
    assert JudgeAttempt.objects.filter(call__run=run).count() == fake.total_requests
