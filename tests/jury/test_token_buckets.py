"""A judge's requests-per-minute bucket, one table for both backends: the database's (its
JudgeLimiter row) and Redis's (a hash, in the Lua scripts). A bucket holds ten seconds'
worth of requests (at least one) and refills at the judge's rate."""

from __future__ import annotations

import pytest

from jury import limits, services
from jury.models import JudgeCall, JudgeLease
from tests.factories import make_study_with_members
from tests.jury.factories import make_judge

CAPACITY = 20

BUCKETS = [
    # requests per minute, requests asked for at once, how many go, the wait then asked (s)
    pytest.param(None, 6, 6, None, id="no limit"),
    pytest.param(600, 6, 6, None, id="100 in the bucket"),
    pytest.param(30, 7, 5, (1.0, 2.0), id="5 in the bucket, then one every 2 s"),
    pytest.param(6, 3, 1, (9.0, 10.0), id="1 in the bucket, then one every 10 s"),
    pytest.param(1, 2, 1, (59.0, 60.0), id="at least 1 in the bucket"),
]


@pytest.fixture(params=["database", pytest.param("redis", marks=pytest.mark.redis)])
def backend(request, settings) -> str:
    if request.param == "redis":
        request.getfixturevalue("redis_limits")
    else:
        settings.JURY_LIMITER = "database"
    return request.param


def slots_in_use(backend: str, judge) -> int:
    if backend == "database":
        return JudgeLease.objects.filter(judge=judge).count()
    limiter = limits.redis_limiter()
    return judge.max_concurrency - limiter.client.llen(limiter.free_key(judge.pk))


@pytest.mark.django_db
@pytest.mark.parametrize("rpm,asked,taken,wait", BUCKETS)
def test_token_bucket(backend, rpm, asked, taken, wait):
    study = make_study_with_members(n_items=asked, n_clinicians=1, k=1).study
    judge = make_judge(requests_per_minute=rpm, max_concurrency=CAPACITY)
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    calls = list(JudgeCall.objects.filter(run=run).order_by("pk"))
    assert limits.backend() == backend and len(calls) == asked

    answers = []
    for call in calls:
        answers.append(limits.acquire(judge=judge, call=call))
        if answers[-1].ok:
            limits.release(call=call)

    assert [a.ok for a in answers] == [True] * taken + [False] * (asked - taken)
    if wait is not None:
        low, high = wait
        refused = answers[taken]
        assert not refused.taken_elsewhere and low < refused.wait_seconds <= high
    assert slots_in_use(backend, judge) == 0  # a refused request holds no slot
