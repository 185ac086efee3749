"""How long a call may take: the default timeout sized from max tokens, and the retry budget
(jury.timing, jury.execution.retries), with the judge fields and help texts that say so."""

from __future__ import annotations

import random

import pytest

from jury.execution import storage
from jury.execution.retries import retry_delay
from jury.forms import JudgeAdminForm
from jury.timing import DEFAULT_RETRY_BUDGET_SECONDS, timeout_for_max_tokens
from tests.factories import make_study_with_members
from tests.jury.factories import make_judge, one_item_run


def test_the_default_timeout_grows_with_max_tokens_and_is_capped():
    assert timeout_for_max_tokens(0) == 30
    assert timeout_for_max_tokens(1024) == pytest.approx(30 + 1024 / 5)
    assert timeout_for_max_tokens(64) < timeout_for_max_tokens(512) < timeout_for_max_tokens(2048)
    assert timeout_for_max_tokens(1_000_000) == 1800


@pytest.mark.django_db
def test_a_judge_without_a_timeout_gets_one_sized_from_its_max_tokens():
    study = make_study_with_members(n_items=1, n_clinicians=1, k=1).study
    sized = make_judge(name="sized", timeout_seconds=None, params={"max_tokens": 2000})
    fixed = make_judge(name="fixed", timeout_seconds=45, params={"max_tokens": 2000})
    unset = make_judge(name="unset", timeout_seconds=None, params={})
    assert sized.request_timeout_seconds == timeout_for_max_tokens(2000) == 430
    assert fixed.request_timeout_seconds == 45
    assert unset.request_timeout_seconds == timeout_for_max_tokens(1024)
    run = one_item_run(study, sized)
    call = run.calls.select_related("judge").get()
    request = storage.build_request(call, call.judge, storage.study_criteria(study.pk)[0])
    assert request.timeout_seconds == 430 and request.max_tokens == 2000


def test_the_admin_says_how_the_timeout_is_sized_and_what_the_budget_covers():
    form = JudgeAdminForm()
    timeout_help = form.fields["timeout_seconds"].help_text
    assert "max_tokens" in timeout_help and "0.2 s per max token" in timeout_help
    assert not form.fields["timeout_seconds"].required
    budget = form.fields["retry_budget_seconds"]
    assert budget.initial == DEFAULT_RETRY_BUDGET_SECONDS >= 300  # outlives a restart
    assert "unreachable" in budget.help_text and "max_attempts" in budget.help_text


def delay(spent: int, elapsed: float, *, retry_after: float | None = None, budget: float = 900):
    return retry_delay(
        spent_attempts=spent,
        max_attempts=5,
        retry_after=retry_after,
        elapsed_seconds=elapsed,
        budget_seconds=budget,
        rng=random.Random(0),
    )


def test_a_call_retries_within_its_attempts_and_its_budget():
    assert 0 <= delay(1, 0) <= 0.5
    assert delay(5, 0) is None  # attempts spent
    assert delay(2, 0, retry_after=120) == 120  # the provider's wait is a floor
    assert delay(2, 800, retry_after=120) is None  # past the budget: end now
    assert delay(2, 10, retry_after=120, budget=60) is None
