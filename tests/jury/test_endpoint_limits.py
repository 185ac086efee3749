"""A server's limit (EndpointLimit) is shared by every judge on it, on both limiters and on
the chunk engine: two judges of concurrency 2 on a server limited to 2 never have more than
2 requests in flight there."""

from __future__ import annotations

import functools

import pytest

from jury import services
from jury.execution import execute_call, execute_calls
from jury.limits.endpoints import origin_of
from jury.models import EndpointLimit, JudgeLease, JuryRun
from tests.factories import make_study_with_members
from tests.jury.factories import make_judge
from tests.support.threads import drain_in_threads, run_in_threads


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("MEDHELM_JUDGE_KEY_FAKE", "sk-test-not-a-secret")


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"),
        ("HTTP://LocalHost:8080/v1/", "http://localhost:8080"),
        ("https://api.openai.com/v1", "https://api.openai.com"),
        ("https://api.openai.com:443", "https://api.openai.com"),
        ("http://[::1]:9000/v1", "http://[::1]:9000"),
        ("gpu-box.example.org:8000/v1", "https://gpu-box.example.org:8000"),
        ("", ""),
    ],
)
def test_a_judge_endpoint_is_matched_by_its_server(url, origin):
    assert origin_of(url) == origin


def test_the_admin_stores_any_url_of_the_server_as_its_origin(admin_client):
    response = admin_client.post(
        "/admin/jury/endpointlimit/add/",
        {"origin": "http://127.0.0.1:8080/v1/", "max_concurrency": "2"},
    )
    assert response.status_code == 302
    assert EndpointLimit.objects.get().origin == "http://127.0.0.1:8080"
    again = admin_client.post(
        "/admin/jury/endpointlimit/add/",
        {"origin": "http://127.0.0.1:8080", "max_concurrency": "3"},
    )
    assert again.status_code == 200 and "already exists" in again.content.decode()


def two_judges_on_one_server(fake_provider, *, n_items: int = 6) -> JuryRun:
    """Two judges of concurrency 2 on the fake server, limited to 2 requests in flight."""
    study = make_study_with_members(n_items=n_items, n_clinicians=2, k=2).study
    EndpointLimit.objects.create(origin=origin_of(fake_provider.openai_url), max_concurrency=2)
    judges = [
        make_judge(fake_provider, name=name, max_concurrency=2, timeout_seconds=30)
        for name in ("judge-a", "judge-b")
    ]
    fake_provider.latency_seconds = 0.2
    return services.start_run(study=study, judges=judges, actor=None, dispatch=False)


def execute_in_threads(ids: list[int], threads: int = 6) -> None:
    drain_in_threads(
        ids, lambda call_id: execute_call(call_id=call_id), threads=threads, first_first=False
    ).join(timeout=120)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("backend", ["database", pytest.param("redis", marks=pytest.mark.redis)])
def test_two_judges_share_their_servers_limit_across_threads(
    backend, request, settings, fake_provider
):
    if backend == "redis":
        request.getfixturevalue("redis_limits")
    else:
        settings.JURY_LIMITER = "database"
    run = two_judges_on_one_server(fake_provider)
    execute_in_threads(list(run.calls.values_list("pk", flat=True)))
    assert run.calls.filter(status="ok").count() == 12
    assert fake_provider.max_in_flight == 2
    assert not JudgeLease.objects.exists()


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_the_chunk_engine_holds_the_servers_limit(redis_limits, fake_provider):
    run = two_judges_on_one_server(fake_provider, n_items=8)
    by_judge = [
        list(run.calls.filter(judge=judge).values_list("pk", flat=True))
        for judge in run.judges.all()
    ]

    run_in_threads(
        [functools.partial(execute_calls, call_ids=ids) for ids in by_judge], timeout=120
    )
    assert run.calls.filter(status="ok").count() == 16
    assert fake_provider.max_in_flight == 2
