"""The planning page: who may open it, each question's answer on the page, input errors
under their field, and the simulation (posted) run here or queued for a worker."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from celery import current_app
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from agreement.models import PlanningSimulation
from agreement.services import simulations
from agreement.stats.planning import bonett_items, exact_items, walter_items
from tests.factories import make_study_with_members

pytestmark = pytest.mark.django_db


@pytest.fixture
def built():
    return make_study_with_members(n_items=2, n_clinicians=3, k=3)


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _url(built, **query) -> str:
    base = reverse("agreement:plan", kwargs={"study_id": built.study.pk})
    if not query:
        return base
    return base + "?" + "&".join(f"{k}={v}" for k, v in query.items())


def _field_errors(html: str, field_id: str) -> str:
    """The error list Django renders for one field (aria-describedby names it)."""
    m = re.search(rf'<ul class="errorlist" id="{field_id}_error">(.*?)</ul>', html, re.S)
    return m.group(1) if m else ""


def test_who_may_open_the_page(built, client):
    url = _url(built)
    assert client.get(url).status_code == 302
    other = make_study_with_members(n_items=2, n_clinicians=2, name="Other")
    for user, status in (
        (built.coordinator, 200),
        (built.researcher, 200),
        (built.clinicians[0], 403),
        (built.outsider, 404),
        (other.coordinator, 404),
    ):
        assert _client(user).get(url).status_code == status, user


def test_linked_from_the_dashboard_and_defaults_from_the_study(built):
    c = _client(built.coordinator)
    dashboard = c.get(reverse("annotation:study", kwargs={"study_id": built.study.pk}))
    assert _url(built).encode() in dashboard.content
    page = c.get(_url(built)).content.decode()
    # the study's 3 ratings per item is the default k
    assert re.search(r'name="precision-k" value="3"', page)


def test_precision_answer(built):
    html = (
        _client(built.coordinator)
        .get(
            _url(
                built,
                **{
                    "question": "precision",
                    "precision-rho": 0.85,
                    "precision-k": 4,
                    "precision-confidence": 0.95,
                    "precision-width": 0.2,
                    "precision-small_k_correction": "on",
                },
            )
        )
        .content.decode()
    )
    expected = bonett_items(0.85, 4, 0.2).n_items
    assert f'data-testid="plan-items">{expected}<' in html
    assert "Bonett (2002)" in html and "19.15" in html


def test_power_answer_gives_both_routes(built):
    query = {
        "question": "power",
        "power-rho0": 0.6,
        "power-rho1": 0.8,
        "power-k": 2,
        "power-alpha": 0.05,
        "power-power": 0.8,
        "power-tails": 1,
    }
    html = _client(built.researcher).get(_url(built, **query)).content.decode()
    walter = walter_items(0.6, 0.8, 2).n_items
    exact = exact_items(0.6, 0.8, 2).n_items
    assert f'data-testid="plan-items">{walter}<' in html
    assert "Walter, Eliasziw &amp; Donner (1998)" in html
    assert f"the exact F test needs {exact}" in html


def test_difference_answer_states_the_approximation(built):
    query = {
        "question": "difference",
        "difference-rho_low": 0.6,
        "difference-difference": 0.15,
        "difference-k_low": 3,
        "difference-k_high": 3,
        "difference-alpha": 0.05,
        "difference-power": 0.8,
        "difference-tails": 1,
    }
    html = _client(built.coordinator).get(_url(built, **query)).content.decode()
    assert "approximation" in html and 'data-testid="plan-items">108<' in html


def test_errors_are_named_under_their_field(built):
    c = _client(built.coordinator)
    # a form-level range error
    r = c.get(_url(built, question="precision", **{"precision-rho": 1.5, "precision-k": 3}))
    assert r.status_code == 400
    html = r.content.decode()
    assert "less than or equal to 0.999" in _field_errors(html, "id_precision-rho")
    assert "required" in _field_errors(html, "id_precision-width")
    # a planner's error (rho1 not above rho0) lands under rho1
    query = {
        "question": "power",
        "power-rho0": 0.8,
        "power-rho1": 0.7,
        "power-k": 3,
        "power-alpha": 0.05,
        "power-power": 0.8,
        "power-tails": 1,
    }
    r = c.get(_url(built, **query))
    assert r.status_code == 400
    assert "must be above rho0" in _field_errors(r.content.decode(), "id_power-rho1")


SIM = {
    "question": "simulation",
    "simulation-item_sd": 1.0,
    "simulation-rater_sd": 0.3,
    "simulation-error_sd": 0.7,
    "simulation-n_items": 40,
    "simulation-raters_per_item": 2,
    "simulation-n_raters": 4,
    "simulation-form": "ICC(1,1)",
    "simulation-confidence": 0.95,
    "simulation-n_studies": 60,
    "simulation-seed": 4,
}


def test_simulation_in_the_request(built, settings):
    settings.AGREEMENT_REPORTS_IN_BACKGROUND = False
    html = _client(built.coordinator).post(_url(built), SIM).content.decode()
    assert 'data-testid="simulation-result"' in html
    assert "icc_oneway_unbalanced" in html
    bad = _client(built.coordinator).post(_url(built), SIM | {"simulation-form": "ICC(A,1)"})
    assert bad.status_code == 400
    assert "incomplete design" in _field_errors(bad.content.decode(), "id_simulation-form")


def _status_url(built, task_id: str, name: str = "agreement:plan-simulation") -> str:
    return reverse(name, kwargs={"study_id": built.study.pk, "task_id": task_id})


def test_simulation_queued_and_followed(built, settings):
    # the worker's side is written into the session's real result backend
    settings.AGREEMENT_REPORTS_IN_BACKGROUND = True
    c = _client(built.coordinator)
    response = c.post(_url(built), SIM)
    record = PlanningSimulation.objects.get()
    link = _status_url(built, record.task_id)
    assert response.status_code == 303 and response["Location"] == link
    assert record.spec["n_studies"] == 60 and record.study == built.study
    assert 'data-state="waiting"' in c.get(link).content.decode()
    backend = current_app.backend
    meta = {"study_id": built.study.pk, "done": 50, "total": 60}
    backend.store_result(record.task_id, meta, "PROGRESS")
    running = c.get(link).content.decode()
    assert 'data-state="running"' in running and "50 of 60 studies" in running
    backend.mark_as_failure(record.task_id, RuntimeError("worker died"))
    failed = c.get(link).content.decode()
    assert "RuntimeError: worker died" in failed and 'http-equiv="refresh"' not in failed


def test_simulation_result_of_another_study_is_not_shown(built):
    record = PlanningSimulation.objects.create(
        task_id="t-elsewhere", study=built.study, requested_by=built.coordinator, spec={}
    )
    current_app.backend.mark_as_done(record.task_id, {"study_id": -1})
    url = _status_url(built, record.task_id, "agreement:plan-simulation-status")
    assert _client(built.coordinator).get(url).json() == {"state": "unknown"}


def test_a_task_no_worker_takes_is_reported_lost(built):
    record = PlanningSimulation.objects.create(
        task_id="t-nobody", study=built.study, requested_by=built.coordinator, spec={}
    )
    long_ago = timezone.now() - timedelta(seconds=simulations.WAITING_TOO_LONG_SECONDS + 60)
    PlanningSimulation.objects.filter(pk=record.pk).update(created_at=long_ago)
    url = _status_url(built, record.task_id, "agreement:plan-simulation-status")
    body = _client(built.coordinator).get(url).json()
    assert body["state"] == "lost" and "worker" in body["reason"]


def test_simulation_of_medhelm_pairs_shows_the_spread(built, settings):
    settings.AGREEMENT_REPORTS_IN_BACKGROUND = False
    query = SIM | {"simulation-form": "MedHELM pairs", "simulation-n_studies": 20}
    html = _client(built.coordinator).post(_url(built), query).content.decode()
    assert 'data-testid="simulation-range"' in html
    assert 'data-testid="simulation-median"' not in html
    assert "clinician_pairwise" in html


def test_every_input_says_its_unit_and_meaning(built):
    """Each field of each question carries a help text naming its unit (a count, ICC units,
    a proportion, scale points) and the page renders it."""
    from agreement.planning_forms import QUESTIONS

    page = _client(built.coordinator).get(_url(built)).content.decode()
    for name, form_class in QUESTIONS.items():
        for field_name, field in form_class.base_fields.items():
            if field_name == "tails":  # its choices say what each test is
                continue
            assert field.help_text, f"{name}.{field_name} has no unit or meaning"
            assert f'id="id_{name}-{field_name}_helptext"' in page, (name, field_name)
    width = QUESTIONS["precision"].base_fields["width"].help_text
    assert "In ICC units" in width and "upper bound minus the lower bound" in width


def test_the_answer_says_what_an_item_is_and_counts_ratings_and_cases():
    built = make_study_with_members(n_items=2, n_clinicians=3, k=3)
    from annotation import services
    from tests.factories import item_rows

    services.create_items(
        study=built.study,
        rows=item_rows(2, models=("model-b", "model-c"), prefix="case"),
        actor=built.coordinator,
    )
    query = {
        "question": "precision",
        "precision-rho": 0.8,
        "precision-k": 3,
        "precision-confidence": 0.95,
        "precision-width": 0.3,
    }
    html = _client(built.coordinator).get(_url(built, **query)).content.decode()
    n = bonett_items(0.8, 3, 0.3, small_k_correction=False).n_items
    assert (
        f"An item is one model output (the unit the ICC is computed over). {n} items, each "
        f"rated by 3 clinicians, make <strong>{3 * n}</strong> item ratings"
    ) in html
    pooled = -(-n // 3)
    assert (
        f"this study&#x27;s 3 models: {n} items in all are {pooled} cases ({pooled * 3} "
        f"items); {n} items of each model (an ICC per model) are {n} cases ({n * 3} items)"
    ) in html
    assert "<th>Items (model outputs)</th>" in html
