"""The agreement watch on the annotation side: a submitted rating queues one refresh after it
commits (a burst queues one, not one per rating), an unreachable broker is shown on the
dashboard and loses no rating, and the dashboard only reads the stored snapshot."""

from __future__ import annotations

import pytest
from celery import current_app
from django.urls import reverse

from annotation import services
from annotation.models import AgreementWatch, Assignment, Rating
from tests.factories import FULL_ANSWERS, TEST_PASSWORD, make_study_with_members
from tests.support.watch_ratings import submit_panel_ratings

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch):
    """The refresh tasks sent, by name and arguments (then really sent to the test broker)."""
    calls: list[tuple[str, list]] = []
    real = current_app.send_task

    def spy(name, args=None, **kwargs):
        calls.append((name, list(args or [])))
        return real(name, args=args, **kwargs)

    monkeypatch.setattr(current_app, "send_task", spy)
    return calls


def _submit(assignment: Assignment) -> None:
    services.submit_assignment(
        assignment_id=assignment.pk, clinician=assignment.clinician, answers=FULL_ANSWERS
    )


def test_a_burst_of_submissions_queues_one_refresh_and_a_started_one_lets_the_next_queue(
    setup, sent, django_capture_on_commit_callbacks
):
    study = setup.study
    first, second, third = Assignment.objects.filter(study=study).order_by("pk")[:3]
    with django_capture_on_commit_callbacks(execute=True):
        _submit(first)
    with django_capture_on_commit_callbacks(execute=True):
        _submit(second)
    assert sent == [("agreement.refresh_watch", [study.pk])]
    assert AgreementWatch.objects.get(study=study).requested_at is not None

    services.start_watch_refresh(study_id=study.pk)
    assert AgreementWatch.objects.get(study=study).requested_at is None
    with django_capture_on_commit_callbacks(execute=True):
        _submit(third)
    assert len(sent) == 2


def test_a_retried_submit_queues_nothing(setup, sent, django_capture_on_commit_callbacks):
    a = Assignment.objects.filter(study=setup.study).first()
    with django_capture_on_commit_callbacks(execute=True):
        _submit(a)
    services.start_watch_refresh(study_id=setup.study.pk)
    with django_capture_on_commit_callbacks(execute=True):
        _submit(a)  # the same answers again: a retry, nothing changed
    assert len(sent) == 1


def test_an_unreachable_broker_keeps_the_rating_and_is_shown_on_the_dashboard(
    setup, monkeypatch, client, django_capture_on_commit_callbacks
):
    def refuse(*args, **kwargs):
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(current_app, "send_task", refuse)
    a = Assignment.objects.filter(study=setup.study).first()
    with django_capture_on_commit_callbacks(execute=True):
        _submit(a)
    a.refresh_from_db()
    assert a.status == Assignment.Status.SUBMITTED
    assert Rating.objects.filter(assignment=a, value__isnull=False).count() == 3
    watch = AgreementWatch.objects.get(study=setup.study)
    assert watch.requested_at is None  # the next rating tries again
    assert "could not be sent to a worker" in watch.error

    client.login(username=setup.coordinator.username, password=TEST_PASSWORD)
    page = client.get(reverse("annotation:study", args=[setup.study.pk]))
    assert "could not be sent to a worker: ConnectionRefusedError: broker down" in page.text


def _dashboard_queries(client, study) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        response = client.get(reverse("annotation:study", args=[study.pk]))
    assert response.status_code == 200
    return len(ctx.captured_queries)


def test_the_dashboard_reads_the_snapshot_and_never_computes_it(
    client, monkeypatch, sent, django_capture_on_commit_callbacks
):
    built = make_study_with_members(n_items=12, n_clinicians=3, k=2)
    study = built.study
    client.login(username=built.coordinator.username, password=TEST_PASSWORD)
    with django_capture_on_commit_callbacks(execute=True):
        submit_panel_ratings(study=study, lenient_user_id=None, limit=4)
    _dashboard_queries(client, study)  # the first request of a session reads more
    few = _dashboard_queries(client, study)
    with django_capture_on_commit_callbacks(execute=True):
        submit_panel_ratings(study=study, lenient_user_id=None)
    assert len(sent) == 1  # queued once, not yet started: every later rating was debounced
    # Computing agreement here would fail the page: the statistics are not reachable.
    import agreement.stats.watch as watch_stats

    def no_computing(*args, **kwargs):
        raise AssertionError("the dashboard computed the agreement watch")

    monkeypatch.setattr(watch_stats, "watch_summary", no_computing)
    many = _dashboard_queries(client, study)
    assert many == few  # reads do not grow with the ratings: nothing is computed from them
    page = client.get(reverse("annotation:study", args=[study.pk])).text
    assert "updating…" in page
    assert "The first figures are being computed." in page


def test_the_dashboard_shows_the_stored_snapshot_with_its_time(setup, client):
    AgreementWatch.objects.create(
        study=setup.study,
        computed_at="2026-12-01T10:00:00Z",
        submissions_seen=4,
        summary={
            "rule": {"text": "RULE TEXT"},
            "panel": {
                "estimate": 0.71,
                "ci_low": 0.52,
                "ci_high": 0.83,
                "confidence": 0.95,
                "n_items": 37,
                "n_pairs": 3,
                "form": "FORM",
                "interval": "INTERVAL",
            },
            "raters": [
                {
                    "rater": "R1",
                    "leniency": {
                        "composite": {
                            "mean_offset": 0.9,
                            "ci_low": 0.6,
                            "ci_high": 1.2,
                            "n_items": 20,
                            "flag": "lenient",
                        }
                    },
                    "agreement": None,
                    "flags": ["lenient"],
                }
            ],
            "drift": [{"batch": "ratings 1-10", "n_items": 5, "agreement": 0.5, "leniency": {}}],
        },
    )
    client.login(username=setup.coordinator.username, password=TEST_PASSWORD)
    page = client.get(reverse("annotation:study", args=[setup.study.pk])).text
    assert "2026-12-01 10:00:00" in page
    assert "<strong>0.71</strong>" in page and "95% CI 0.52 to 0.83" in page
    assert "37" in page and "RULE TEXT" in page and "lenient" in page
    assert "updating…" not in page


def test_the_request_after_a_rating_commits_costs_one_query_or_two_in_a_burst(setup, sent):
    """Outside the rating's transaction (pinned in test_rating_query_counts), a submit costs
    these after it commits."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    study_id = setup.study.pk
    assert services.request_watch_refresh(study_id=study_id)  # the first ever creates the row
    services.start_watch_refresh(study_id=study_id)
    with CaptureQueriesContext(connection) as claim:
        assert services.request_watch_refresh(study_id=study_id)
    with CaptureQueriesContext(connection) as burst:
        assert not services.request_watch_refresh(study_id=study_id)
    assert (len(claim), len(burst)) == (1, 2)
    assert len(sent) == 2


def test_the_coordinator_can_recompute_now_even_while_one_is_queued(
    setup, sent, client, django_capture_on_commit_callbacks
):
    study = setup.study
    with django_capture_on_commit_callbacks(execute=True):
        _submit(Assignment.objects.filter(study=study).first())
    assert len(sent) == 1  # queued; say its worker was lost
    client.login(username=setup.coordinator.username, password=TEST_PASSWORD)
    response = client.post(reverse("annotation:watch-refresh", args=[study.pk]), follow=True)
    assert len(sent) == 2
    assert "being recomputed by a worker" in response.text


def test_recompute_now_says_when_the_broker_is_unreachable(setup, client, monkeypatch):
    def refuse(*args, **kwargs):
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(current_app, "send_task", refuse)
    client.login(username=setup.coordinator.username, password=TEST_PASSWORD)
    url = reverse("annotation:watch-refresh", args=[setup.study.pk])
    page = client.post(url, follow=True).text
    assert "could not be recomputed: the refresh could not be sent to a worker" in page


@pytest.mark.parametrize("who", ["researcher", "clinician", "outsider"])
def test_only_the_coordinator_can_recompute(setup, sent, client, who):
    user = setup.clinicians[0] if who == "clinician" else getattr(setup, who)
    client.login(username=user.username, password=TEST_PASSWORD)
    response = client.post(reverse("annotation:watch-refresh", args=[setup.study.pk]))
    assert response.status_code in (403, 404)
    assert sent == []
