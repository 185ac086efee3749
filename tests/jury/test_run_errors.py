"""A run's failures are shown where people look: its top error reasons with counts on the run
page and in `run_jury`, every attempt in a CSV, and the calls CSV with attempts and finish
reason."""

from __future__ import annotations

import csv
import io
import random

import pytest
from django.core.management import call_command

from jury import services
from jury.execution import execute_call
from jury.models import JuryRun
from tests.factories import make_study_with_members
from tests.jury.factories import call_ids, make_judge


@pytest.fixture
def setup(db, monkeypatch):
    monkeypatch.setenv("MEDHELM_JUDGE_KEY_FAKE", "sk-test")
    return make_study_with_members(n_items=3, n_clinicians=2, k=2)


def failing_run(setup, fake_provider) -> JuryRun:
    """Three calls: two 500s then ok, a 429 then ok, and a 400 that ends the call."""
    judge = make_judge(fake_provider, name="gpt")
    run = services.start_run(study=setup.study, judges=[judge], actor=None, dispatch=False)
    fake_provider.retry_after_seconds = 0
    fake_provider.enqueue("500", "500", "ok", "429", "ok", "400")
    for call_id in call_ids(run):
        execute_call(call_id=call_id, sleep=lambda s: None, rng=random.Random(1))
    return run


def read_csv(response) -> list[dict[str, str]]:
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_the_run_page_shows_the_top_error_reasons_with_counts(client, setup, fake_provider):
    run = failing_run(setup, fake_provider)
    client.force_login(setup.researcher)
    page = client.get(f"/studies/{setup.study.pk}/jury/runs/{run.pk}/").content.decode()
    assert 'data-testid="run-errors"' in page
    section = page.split('data-testid="run-errors"', 1)[1]
    rows = [r for r in section.split("</table>")[0].split("<tr>") if "<td>" in r]
    assert [r.split("<td>")[1].split("</td>")[0] for r in rows] == ["2", "1", "1"]
    assert "server_error" in rows[0] and "HTTP 500" in rows[0]
    assert "4 of 6 attempts failed" in section


def test_a_run_without_failed_attempts_says_so(client, setup, fake_provider):
    judge = make_judge(fake_provider, name="gpt")
    run = services.start_run(study=setup.study, judges=[judge], actor=None, dispatch=False)
    for call_id in call_ids(run):
        execute_call(call_id=call_id)
    client.force_login(setup.researcher)
    page = client.get(f"/studies/{setup.study.pk}/jury/runs/{run.pk}/").content.decode()
    assert "No failed attempt" in page


def test_run_jury_prints_the_top_error_reasons(setup, fake_provider):
    run = failing_run(setup, fake_provider)
    out = io.StringIO()
    call_command("run_jury", watch=run.pk, stdout=out)
    text = out.getvalue()
    assert "Top error reasons (4 of 6 attempts failed):" in text
    lines = text.split("Top error reasons", 1)[1].splitlines()[1:4]
    assert lines[0].split()[:2] == ["2", "server_error:"] and "HTTP 500" in lines[0]
    assert {line.split()[1] for line in lines[1:]} == {
        "rate_limited:",
        "bad_request:",
    }


def test_every_attempt_is_in_the_attempts_csv(client, setup, fake_provider):
    run = failing_run(setup, fake_provider)
    client.force_login(setup.researcher)
    response = client.get(f"/studies/{setup.study.pk}/jury/runs/{run.pk}/attempts.csv")
    assert response["Content-Type"] == "text/csv"
    rows = read_csv(response)
    assert len(rows) == fake_provider.total_requests == 6
    assert [r["outcome"] for r in rows] == [
        "server_error",
        "server_error",
        "ok",
        "rate_limited",
        "ok",
        "bad_request",
    ]
    assert [r["number"] for r in rows] == ["1", "2", "3", "1", "2", "1"]
    assert rows[0]["http_status"] == "500" and rows[2]["finish_reason"] == "stop"
    assert rows[0]["judge"] == "gpt" and rows[0]["started_at"] and rows[0]["latency_ms"]


def test_the_calls_csv_has_attempts_finish_reason_and_plain_zero_costs(
    client, setup, fake_provider
):
    run = failing_run(setup, fake_provider)
    cached = services.start_run(
        study=setup.study, judges=list(run.judges.all()), actor=None, dispatch=False
    )
    for call_id in call_ids(cached):
        execute_call(call_id=call_id, sleep=lambda s: None)
    client.force_login(setup.researcher)
    rows = read_csv(client.get(f"/studies/{setup.study.pk}/jury/runs/{run.pk}/calls.csv"))
    assert [(r["status"], r["attempts"], r["finish_reason"]) for r in rows] == [
        ("ok", "3", "stop"),
        ("ok", "2", "stop"),
        ("provider_error", "1", ""),
    ]
    rows = read_csv(client.get(f"/studies/{setup.study.pk}/jury/runs/{cached.pk}/calls.csv"))
    served = [r for r in rows if r["cached_from"]]
    assert len(served) == 2 and {r["cost"] for r in served} == {"0"}
