"""The demo's 135M judge is labelled a pipeline check wherever a demo user reads its scores:
the jury run page, the agreement reports page and a report."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from annotation.demo import COORDINATOR, DEMO_STUDY_NAME, load_demo
from annotation.models import RatingStudy
from jury.demo import load_demo_jury
from jury.models import Judge

LABEL = ("pipeline check", "no signal", "docs/judges.md")


def assert_labelled(page: str) -> None:
    text = " ".join(page.lower().split())
    missing = [phrase for phrase in LABEL if phrase.lower() not in text]
    assert not missing, f"the page lacks {missing}"


@pytest.fixture
def demo(db, client, django_capture_on_commit_callbacks):
    load_demo()
    with django_capture_on_commit_callbacks(execute=False):  # no worker: the calls wait
        load_demo_jury()
    client.force_login(get_user_model().objects.get(username=COORDINATOR))
    return RatingStudy.objects.get(name=DEMO_STUDY_NAME)


def test_the_run_page_labels_the_demo_judge(client, demo):
    run = demo.jury_runs.get()
    page = client.get(f"/studies/{demo.pk}/jury/runs/{run.pk}/")
    assert page.status_code == 200
    assert_labelled(page.content.decode())


def test_the_agreement_pages_label_the_demo_judge(client, demo, settings):
    settings.AGREEMENT_REPORTS_IN_BACKGROUND = False  # the report itself, not its job page
    reports = client.get(f"/studies/{demo.pk}/agreement/")
    assert reports.status_code == 200
    assert_labelled(reports.content.decode())
    form = {"n_resamples": 10, "seed": 1, "confidence": 0.95, "ci_method": "percentile"} | {
        "values": "latest",
        "min_shared_items": 2,
        "max_ci_width": 2.0,
    }
    # The demo judge's calls are waiting (no worker): computing needs a confirmation.
    assert client.post(f"/studies/{demo.pk}/agreement/", form).status_code == 200
    computed = client.post(f"/studies/{demo.pk}/agreement/", form | {"confirm_incomplete": "on"})
    assert computed.status_code == 302
    report = client.get(computed["Location"])
    assert report.status_code == 200
    assert_labelled(report.content.decode())


def test_a_judge_without_a_description_adds_no_note(client, demo):
    Judge.objects.update(description="")
    run = demo.jury_runs.get()
    page = client.get(f"/studies/{demo.pk}/jury/runs/{run.pk}/").content.decode()
    assert "docs/judges.md" not in page


@pytest.mark.django_db
def test_a_demo_database_from_before_gets_the_label(django_capture_on_commit_callbacks):
    load_demo()
    Judge.objects.create(name="smollm2-local", provider="local", model_id="SmolLM2-135M")
    with django_capture_on_commit_callbacks(execute=False):
        load_demo_jury()
    [judge] = Judge.objects.all()
    assert_labelled(f"{judge.name} {judge.description}")
