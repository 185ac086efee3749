"""Jury pages (start, progress, cancel, resume, prompt versions) and the run_jury command."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from jury.models import JuryRun, PromptTemplate
from tests.factories import make_study_with_members
from tests.jury.factories import make_judge


@pytest.fixture
def setup(db, monkeypatch):
    monkeypatch.setenv("MEDHELM_JUDGE_KEY_FAKE", "sk-test")
    return make_study_with_members(n_items=3, n_clinicians=2, k=2)


@pytest.mark.django_db(transaction=True)
def test_command_runs_inline_with_a_progress_bar(fake_provider, monkeypatch):
    # Threads write through their own connections: the data must be committed.
    monkeypatch.setenv("MEDHELM_JUDGE_KEY_FAKE", "sk-test")
    setup = make_study_with_members(n_items=3, n_clinicians=2, k=2)
    make_judge(fake_provider, name="gpt")
    out = io.StringIO()
    call_command("run_jury", study=setup.study.pk, judge=["gpt"], inline=2, stdout=out)
    text = out.getvalue()
    run = JuryRun.objects.get()
    assert run.status == "finished" and run.calls.filter(status="ok").count() == 3
    assert "[##############################] 3/3 done, 0 failed, 0 left" in text
    # Not a terminal: one line per change of progress, never the same line twice.
    progress_lines = [line for line in text.splitlines() if line.startswith("[")]
    assert len(progress_lines) == len(set(progress_lines)) and "\r" not in text
    assert "gpt: ok 3; failure rate 0%" in text


def test_command_names_unknown_judges(setup):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match=r"unknown judges \['nope'\]"):
        call_command("run_jury", study=setup.study.pk, judge=["nope"], inline=1)


def test_coordinator_starts_watches_cancels_and_resumes_a_run(
    client, setup, fake_provider, django_capture_on_commit_callbacks
):
    judge = make_judge(fake_provider, name="gpt")
    client.force_login(setup.coordinator)
    with django_capture_on_commit_callbacks(
        execute=False
    ):  # no worker here: keep the calls pending
        response = client.post(f"/studies/{setup.study.pk}/jury/", {"judges": [judge.pk]})
    run = JuryRun.objects.get()
    assert (
        response.status_code == 302
        and response["Location"] == f"/studies/{setup.study.pk}/jury/runs/{run.pk}/"
    )
    status = client.get(response["Location"] + "status.json").json()
    assert (status["done"], status["total"], status["remaining"]) == (0, 3, 3)
    client.post(f"/studies/{setup.study.pk}/jury/runs/{run.pk}/cancel/")
    run.refresh_from_db()
    assert run.status == "cancelled"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        client.post(f"/studies/{setup.study.pk}/jury/runs/{run.pk}/resume/")
    assert len(callbacks) == 1  # the three pending calls are dispatched again
    run.refresh_from_db()
    assert run.status == "running" and not run.cancel_requested
    csv_text = b"".join(
        client.get(f"/studies/{setup.study.pk}/jury/runs/{run.pk}/calls.csv").streaming_content
    ).decode()
    assert (
        csv_text.splitlines()[0].startswith("call_id,judge,item_id")
        and len(csv_text.splitlines()) == 4
    )


def test_researchers_read_runs_but_cannot_start_or_cancel(client, setup, fake_provider):
    judge = make_judge(fake_provider, name="gpt")
    client.force_login(setup.researcher)
    assert client.get(f"/studies/{setup.study.pk}/jury/").status_code == 200
    assert (
        client.post(f"/studies/{setup.study.pk}/jury/", {"judges": [judge.pk]}).status_code == 403
    )
    assert not JuryRun.objects.exists()


def test_prompt_edits_are_new_versions_and_bad_templates_are_named(client, setup):
    client.force_login(setup.coordinator)
    url = f"/studies/{setup.study.pk}/jury/prompt/"
    bad = client.post(url, {"name": "mine", "system_text": "", "body": "Rate {{answer}}"})
    assert (
        "answer" in bad.content.decode() and not PromptTemplate.objects.filter(name="mine").exists()
    )
    body = "Question: {{question}}\n<response>{{response}}</response>\n{{criteria}}"
    client.post(url, {"name": "mine", "system_text": "", "body": body})
    client.post(url, {"name": "mine", "system_text": "", "body": body + "\nBe strict."})
    assert list(
        PromptTemplate.objects.filter(name="mine")
        .values_list("version", flat=True)
        .order_by("version")
    ) == [1, 2]


def test_a_run_that_cannot_start_says_why_on_the_form(client, setup, fake_provider):
    judge = make_judge(fake_provider, name="gpt")
    client.force_login(setup.coordinator)
    url = f"/studies/{setup.study.pk}/jury/"
    # Models and nodes are picked from what the study holds (tests/jury/test_run_live.py);
    # one not offered is refused by the form, before the run's own checks.
    page = client.post(url, {"judges": [judge.pk], "taxonomy_node": 987654})
    assert page.status_code == 200 and "Select a valid choice" in page.content.decode()
    setup.study.items.all().delete()
    page = client.post(url, {"judges": [judge.pk]})
    assert "no item of the study matches" in page.content.decode()
    assert not JuryRun.objects.exists()
