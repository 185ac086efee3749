"""What a clinician's browser receives: never the model, other raters or machine scores.
And the pages cost a fixed number of SQL queries whatever the study's size."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation import services
from annotation.models import Assignment
from tests.factories import TEST_PASSWORD, make_study_with_members

A = services.CriterionAnswer
FULL = {
    "accuracy": A(value=4),
    "completeness": A(value=3),
    "clarity": A(value=5, comment="OTHER-RATER-SECRET"),
}
SECRET_MODEL = "secret-model-name-xyz"


@pytest.fixture
def blinded(db):
    setup = make_study_with_members(n_items=0, n_clinicians=2, k=2)
    rows = [
        services.ItemRow(
            external_id="q1",
            input_text="Q <b>bold?</b>",
            output_text="<script>alert(1)</script>\n- one\n- **two**",
            reference_text="ref",
            model_name=SECRET_MODEL,
            metadata={"source": "SECRET-METADATA", "prompt_context": "Few-shot <i>example</i>"},
        )
    ]
    services.create_items(study=setup.study, rows=rows, actor=setup.coordinator)
    services.assign_items(study=setup.study, actor=setup.coordinator, seed=1)
    # the other clinician rates first
    other = Assignment.objects.get(clinician=setup.clinicians[1])
    services.submit_assignment(assignment_id=other.pk, clinician=setup.clinicians[1], answers=FULL)
    return setup


def test_nothing_a_clinician_receives_names_the_model_or_other_ratings(client, blinded):
    clinician = blinded.clinicians[0]
    client.login(username=clinician.username, password=TEST_PASSWORD)
    a = Assignment.objects.get(clinician=clinician)
    study = blinded.study.pk
    responses = [
        client.get("/"),
        client.get(f"/studies/{study}/queue/"),
        client.get(f"/studies/{study}/rate/{a.handle}/"),
        client.get(f"/studies/{study}/rate/", follow=True),
        client.get(f"/api/studies/{study}/queue/"),
        client.get(f"/api/assignments/{a.handle}/"),
        client.get(f"/api/studies/{study}/"),
        client.get("/api/studies/"),
    ]
    for r in responses:
        body = r.content.decode()
        assert r.status_code == 200
        assert SECRET_MODEL not in body
        assert "OTHER-RATER-SECRET" not in body
        assert blinded.clinicians[1].username not in body
        assert "SECRET-METADATA" not in body  # of metadata, only the prompt's context


def test_the_prompts_context_is_the_only_metadata_a_rater_gets(client, blinded):
    clinician = blinded.clinicians[0]
    client.login(username=clinician.username, password=TEST_PASSWORD)
    a = Assignment.objects.get(clinician=clinician)
    api = client.get(f"/api/assignments/{a.handle}/").json()
    assert api["context_text"] == "Few-shot <i>example</i>"
    page = client.get(f"/studies/{blinded.study.pk}/rate/{a.handle}/").content.decode()
    # collapsed (no "open"), escaped like every item text
    assert '<details class="card prompt-context" id="text-context" data-testid="context">' in page
    assert "Few-shot &lt;i&gt;example&lt;/i&gt;" in page


def test_model_text_is_escaped_with_simple_markdown_kept(client, blinded):
    clinician = blinded.clinicians[0]
    client.login(username=clinician.username, password=TEST_PASSWORD)
    a = Assignment.objects.get(clinician=clinician)
    body = client.get(f"/studies/{blinded.study.pk}/rate/{a.handle}/").content.decode()
    assert "<script>alert(1)</script>" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "<li><strong>two</strong></li>" in body
    assert "&lt;b&gt;bold?&lt;/b&gt;" in body


def test_the_page_form_submits_and_moves_on(client, db):
    setup = make_study_with_members(n_items=4, n_clinicians=2, k=2)
    clinician = setup.clinicians[0]
    client.login(username=clinician.username, password=TEST_PASSWORD)
    first, second = Assignment.objects.filter(clinician=clinician).order_by("position")[:2]
    url = f"/studies/{setup.study.pk}/rate/{first.handle}/"
    bad = client.post(url, {"c-accuracy": "4", "c-completeness": "3"})
    assert bad.status_code == 400 and "a value is required to submit" in bad.content.decode()
    good = client.post(
        url, {"c-accuracy": "4", "c-completeness": "3", "c-clarity": "5", "time_spent": "12"}
    )
    assert good.status_code == 302 and good["Location"].endswith(f"/rate/{second.handle}/")
    first.refresh_from_db()
    assert first.status == "submitted" and first.time_spent_seconds == 12


def _queries(client, url) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.django_db
@pytest.mark.parametrize("page", ["queue", "rate", "dashboard"])
def test_page_queries_do_not_grow_with_the_study(client, page):
    counts = []
    for n_items in (4, 40):
        setup = make_study_with_members(
            n_items=n_items, n_clinicians=3, k=2, name=f"size {n_items}"
        )
        clinician = setup.clinicians[0]
        mine = list(Assignment.objects.filter(clinician=clinician).order_by("position"))
        for a in mine[: len(mine) // 2]:
            services.submit_assignment(assignment_id=a.pk, clinician=clinician, answers=FULL)
        user = setup.coordinator if page == "dashboard" else clinician
        client.force_login(user)
        url = {
            "queue": f"/studies/{setup.study.pk}/queue/",
            "rate": f"/studies/{setup.study.pk}/rate/{mine[-1].handle}/",
            "dashboard": f"/studies/{setup.study.pk}/",
        }[page]
        counts.append(_queries(client, url))
    assert counts[0] == counts[1], counts
