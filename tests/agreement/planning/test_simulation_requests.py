"""Starting a design simulation (issue 30): only a POST with its CSRF token queues one, on the
simulations' own queue; its size is bounded; each user has one waiting or running at a time,
which they can cancel; and a task id is read back only within the study that queued it. The
broker and the result backend are the test session's real ones."""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from celery import current_app
from celery.exceptions import TimeLimitExceeded
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from agreement.models import PlanningSimulation
from annotation.models import AuditEvent
from tests.factories import make_study_with_members

pytestmark = pytest.mark.django_db

SIMULATE_DESIGN_TASK = "agreement.simulate_design"

SMALL = {
    "simulation-item_sd": 1.0,
    "simulation-rater_sd": 0.3,
    "simulation-error_sd": 0.7,
    "simulation-n_items": 30,
    "simulation-raters_per_item": 2,
    "simulation-n_raters": 4,
    "simulation-form": "ICC(1,1)",
    "simulation-confidence": 0.95,
    "simulation-n_studies": 20,
    "simulation-seed": 3,
}
#: The review's request: 5,000 studies of 100,000 items (about 14 hours of a worker's CPU).
HUGE = SMALL | {
    "simulation-n_items": 100_000,
    "simulation-raters_per_item": 2,
    "simulation-n_raters": 2,
    "simulation-n_studies": 5000,
}


@pytest.fixture
def built(settings):
    settings.AGREEMENT_REPORTS_IN_BACKGROUND = True
    return make_study_with_members(n_items=2, n_clinicians=2, k=2)


def _client(user, **kwargs) -> Client:
    c = Client(**kwargs)
    c.force_login(user)
    return c


def _plan(study) -> str:
    return reverse("agreement:plan", kwargs={"study_id": study.pk})


def _page(study, task_id: str, name: str = "plan-simulation") -> str:
    return reverse(f"agreement:{name}", kwargs={"study_id": study.pk, "task_id": task_id})


def _post(client: Client, study, data: dict, capture) -> object:
    with capture(execute=True):
        return client.post(_plan(study), {"question": "simulation", **data})


def test_a_get_of_the_simulation_answers_405_and_queues_nothing(
    built, broker_queues, django_capture_on_commit_callbacks
):
    url = _plan(built.study) + "?" + urlencode({"question": "simulation", **HUGE})
    with django_capture_on_commit_callbacks(execute=True):
        response = _client(built.researcher).get(url)
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    # a page saying why, with the way back to the form (not the browser's bare error)
    page = response.content.decode()
    assert "started only by the form" in page and "Nothing was started" in page
    assert f'href="{_plan(built.study)}#simulation"' in page
    assert broker_queues.counts() == {"celery": 0, "planning": 0}
    assert not PlanningSimulation.objects.exists()


def test_the_page_posts_the_simulation_and_gets_the_sample_sizes(built):
    html = _client(built.coordinator).get(_plan(built.study)).content.decode()
    section = re.search(r'<section[^>]*id="simulation".*?</section>', html, re.S).group(0)
    assert re.search(r'<form method="post"', section)
    assert 'name="csrfmiddlewaretoken"' in section
    precision = re.search(r'<section[^>]*id="precision".*?</section>', html, re.S).group(0)
    assert '<form method="get"' in precision


def test_a_cross_site_post_is_refused(built, broker_queues, django_capture_on_commit_callbacks):
    c = _client(built.researcher, enforce_csrf_checks=True)
    response = _post(c, built.study, SMALL, django_capture_on_commit_callbacks)
    assert response.status_code == 403
    assert broker_queues.counts() == {"celery": 0, "planning": 0}


def test_a_post_queues_one_simulation_on_the_planning_queue(
    built, broker_queues, django_capture_on_commit_callbacks
):
    c = _client(built.researcher)
    response = _post(c, built.study, SMALL, django_capture_on_commit_callbacks)
    record = PlanningSimulation.objects.get()
    assert response.status_code == 303
    assert response["Location"] == _page(built.study, record.task_id)
    assert broker_queues.counts() == {"celery": 0, "planning": 1}
    assert (record.study, record.requested_by, record.ended_at) == (
        built.study,
        built.researcher,
        None,
    )
    assert record.spec["n_items"] == 30
    event = AuditEvent.objects.get(action="plan.simulate")
    assert (event.actor, event.study, event.target_id) == (
        built.researcher,
        built.study,
        str(record.pk),
    )
    page = c.get(response["Location"]).content.decode()
    assert 'data-state="waiting"' in page
    assert f'action="{_page(built.study, record.task_id, "plan-simulation-cancel")}"' in page


def test_an_over_limit_simulation_is_refused_naming_the_limit_and_the_product(
    built, broker_queues, django_capture_on_commit_callbacks
):
    c = _client(built.coordinator)
    response = _post(c, built.study, HUGE, django_capture_on_commit_callbacks)
    assert response.status_code == 400
    html = response.content.decode()
    errors = re.search(
        r'<ul class="errorlist" id="id_simulation-n_studies_error">(.*?)</ul>', html, re.S
    ).group(1)
    from agreement.stats.planning_sim import MAX_STUDIES_ITEMS_RATERS

    assert "5,000 x 100,000 x 2 = 1,000,000,000" in errors
    assert f"{MAX_STUDIES_ITEMS_RATERS['ICC']:,}" in errors
    assert broker_queues.counts() == {"celery": 0, "planning": 0}
    assert not PlanningSimulation.objects.exists()


def test_a_second_simulation_while_the_first_waits_is_refused_with_a_link_to_it(
    built, broker_queues, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    c = _client(built.researcher)
    assert _post(c, built.study, SMALL, capture).status_code == 303
    first = PlanningSimulation.objects.get()
    again = _post(c, built.study, SMALL | {"simulation-seed": 4}, capture)
    assert again.status_code == 400
    html = again.content.decode()
    assert "already have a simulation waiting or running" in html
    assert f'href="{_page(built.study, first.task_id)}"' in html
    assert broker_queues.counts() == {"celery": 0, "planning": 1}
    # in another study too: the slot is the user's
    other = make_study_with_members(n_items=2, n_clinicians=2, name="Other")
    from annotation import services as annotation_services
    from annotation.models import StudyMembership

    annotation_services.add_member(
        study=other.study,
        user=built.researcher,
        role=StudyMembership.Role.RESEARCHER,
        actor=other.coordinator,
    )
    assert _post(c, other.study, SMALL, capture).status_code == 400
    # another user has their own
    assert _post(_client(built.coordinator), built.study, SMALL, capture).status_code == 303
    assert broker_queues.counts() == {"celery": 0, "planning": 2}


def test_the_slot_is_freed_when_the_simulation_ends_fails_or_times_out(
    built, broker_queues, django_capture_on_commit_callbacks
):
    from agreement.tasks import simulate_design_task

    capture = django_capture_on_commit_callbacks
    c = _client(built.coordinator)
    # ends: the task, run here through Celery's eager path
    assert _post(c, built.study, SMALL, capture).status_code == 303
    record = PlanningSimulation.objects.get()
    simulate_design_task.apply(
        kwargs={"study_id": built.study.pk, "spec": record.spec}, task_id=record.task_id
    ).get()
    record.refresh_from_db()
    assert record.outcome == "finished" and record.ended_at is not None
    # fails: a spec the planner refuses inside the worker
    assert _post(c, built.study, SMALL, capture).status_code == 303
    record = PlanningSimulation.objects.get(ended_at=None)
    failed = simulate_design_task.apply(
        kwargs={"study_id": built.study.pk, "spec": record.spec | {"form": "ICC(9,9)"}},
        task_id=record.task_id,
    )
    assert failed.failed()
    record.refresh_from_db()
    assert record.outcome == "failed" and "unknown ICC form" in record.reason
    # times out: the worker's hard limit killed it (Celery stores TimeLimitExceeded)
    assert _post(c, built.study, SMALL, capture).status_code == 303
    record = PlanningSimulation.objects.get(ended_at=None)
    from agreement.services import simulations

    current_app.backend.mark_as_failure(
        record.task_id, TimeLimitExceeded(simulations.SIMULATION_HARD_TIME_LIMIT_SECONDS)
    )
    status = c.get(_page(built.study, record.task_id, "plan-simulation-status")).json()
    limit = simulations.SIMULATION_TIME_LIMIT_SECONDS
    assert status == {"state": "failed", "reason": f"took longer than {limit} s"}
    page = c.get(_page(built.study, record.task_id)).content.decode()
    assert f"took longer than {limit} s" in page
    assert _post(c, built.study, SMALL, capture).status_code == 303
    record.refresh_from_db()
    assert record.outcome == "failed"
    # lost: no worker took it for longer than the wait the page allows
    lost = PlanningSimulation.objects.get(ended_at=None)
    PlanningSimulation.objects.filter(pk=lost.pk).update(
        created_at=timezone.now() - timedelta(seconds=simulations.WAITING_TOO_LONG_SECONDS + 1)
    )
    body = c.get(_page(built.study, lost.task_id, "plan-simulation-status")).json()
    assert body["state"] == "lost" and "worker" in body["reason"]
    assert _post(c, built.study, SMALL, capture).status_code == 303


def test_the_task_has_a_time_limit_and_its_own_queue(settings):
    from agreement.tasks import simulate_design_task

    route = current_app.amqp.router.route({}, SIMULATE_DESIGN_TASK)
    assert route["queue"].name == "planning"
    from agreement.services import simulations

    assert simulate_design_task.soft_time_limit == simulations.SIMULATION_TIME_LIMIT_SECONDS
    assert simulate_design_task.time_limit == simulations.SIMULATION_HARD_TIME_LIMIT_SECONDS
    assert simulate_design_task.time_limit > simulate_design_task.soft_time_limit
    assert "planning" in settings.CELERY_TASK_QUEUES
    assert any("planning" in w["queues"] for w in settings.MEDHELM_DEMO_WORKERS.values())


def test_a_cancelled_simulation_reads_cancelled_frees_the_slot_and_never_runs(
    built, broker_queues, django_capture_on_commit_callbacks
):
    from agreement.tasks import simulate_design_task

    capture = django_capture_on_commit_callbacks
    researcher, coordinator = _client(built.researcher), _client(built.coordinator)
    assert _post(researcher, built.study, SMALL, capture).status_code == 303
    record = PlanningSimulation.objects.get()
    cancel = _page(built.study, record.task_id, "plan-simulation-cancel")
    assert researcher.get(cancel).status_code == 405
    # a coordinator may cancel anybody's; the requester their own
    with capture(execute=True):
        response = coordinator.post(cancel)
    assert response.status_code == 303
    assert response["Location"] == _page(built.study, record.task_id)
    page = researcher.get(response["Location"]).content.decode()
    assert 'data-state="cancelled"' in page and "cancelled" in page
    assert 'http-equiv="refresh"' not in page and cancel not in page
    record.refresh_from_db()
    assert record.outcome == "cancelled" and record.ended_at is not None
    event = AuditEvent.objects.get(action="plan.simulation_cancel")
    assert (event.actor, event.target_id) == (built.coordinator, str(record.pk))
    # the message already on the broker: a worker that takes it runs nothing
    assert (
        simulate_design_task.apply(
            kwargs={"study_id": built.study.pk, "spec": record.spec}, task_id=record.task_id
        ).state
        == "IGNORED"
    )
    assert researcher.get(_page(built.study, record.task_id, "plan-simulation-status")).json() == {
        "state": "cancelled"
    }
    assert coordinator.post(cancel).status_code == 400  # ended already
    # the slot is free again; a researcher cannot cancel another user's simulation
    assert _post(researcher, built.study, SMALL, capture).status_code == 303
    assert _post(coordinator, built.study, SMALL, capture).status_code == 303
    theirs = PlanningSimulation.objects.get(ended_at=None, requested_by=built.coordinator)
    denied = researcher.post(_page(built.study, theirs.task_id, "plan-simulation-cancel"))
    assert denied.status_code == 403
    theirs.refresh_from_db()
    assert theirs.ended_at is None


def test_a_task_of_another_study_reads_as_unknown(built):
    """Every state is checked against the study that queued the task: a failed task of
    another study does not show its error text here, a running one not its progress, and a
    Celery task id never queued as a simulation (an import's, say) is unknown too."""
    other = make_study_with_members(n_items=2, n_clinicians=2, name="Other")
    backend = current_app.backend
    failed, running, stranger = "sim-failed-other", "sim-running-other", "import-task-1"
    for task_id, user in ((failed, other.coordinator), (running, other.researcher)):
        PlanningSimulation.objects.create(
            task_id=task_id, study=other.study, requested_by=user, spec={}
        )
    backend.mark_as_failure(failed, RuntimeError("secret: /srv/medhelm/other-study.csv"))
    backend.store_result(running, {"pid": 1, "hostname": "w"}, "STARTED")
    backend.mark_as_failure(stranger, RuntimeError("secret: /srv/medhelm/import.csv"))
    c = _client(built.coordinator)
    for task_id in (failed, running, stranger):
        status = c.get(_page(built.study, task_id, "plan-simulation-status"))
        assert status.json() == {"state": "unknown"}, task_id
        page = c.get(_page(built.study, task_id)).content.decode()
        assert 'data-state="unknown"' in page and "secret" not in page, task_id
    # within its own study, the failed one says why
    own = _client(other.coordinator).get(_page(other.study, failed, "plan-simulation-status"))
    assert own.json() == {
        "state": "failed",
        "reason": "RuntimeError: secret: /srv/medhelm/other-study.csv",
    }
