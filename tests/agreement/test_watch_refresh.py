"""The agreement watch refresh: from the ratings clinicians submitted through the rating
service to the stored snapshot (the planted lenient clinician flagged, the honest ones not),
a failure kept beside the last snapshot, and the same in a real Celery worker, where a burst
of submissions makes few refreshes, not one per rating."""

from __future__ import annotations

import time

import pytest

from agreement.services import watch as watch_service
from annotation.models import AgreementWatch, Assignment
from tests.factories import make_study_with_members
from tests.support.celery_worker import running_worker
from tests.support.watch_ratings import pseudonym_of, submit_panel_ratings


def _planted_study():
    built = make_study_with_members(n_items=40, n_clinicians=4, k=3)
    lenient = built.clinicians[1]
    return built, lenient


def _flags(summary: dict) -> dict[str, list[str]]:
    return {r["rater"]: r["flags"] for r in summary["raters"]}


@pytest.mark.django_db
def test_the_refresh_stores_a_snapshot_flagging_the_planted_lenient_clinician():
    built, lenient = _planted_study()
    submitted = submit_panel_ratings(study=built.study, lenient_user_id=lenient.pk)
    assert submitted == 120
    watch_service.refresh_watch(study_id=built.study.pk)

    watch = AgreementWatch.objects.get(study=built.study)
    assert watch.requested_at is None and watch.error == ""
    assert watch.submissions_seen == 120 and watch.computed_at is not None
    flags = _flags(watch.summary)
    planted = pseudonym_of(built.study, lenient.pk)
    assert flags.pop(planted) == ["lenient"]
    assert len(flags) == 3 and all(f == [] for f in flags.values()), flags
    panel = watch.summary["panel"]
    assert panel["n_items"] == 40 and panel["n_clinicians"] == 4
    assert panel["ci_low"] < panel["estimate"] < panel["ci_high"]


@pytest.mark.django_db
def test_a_failed_refresh_keeps_the_last_snapshot_and_says_why(monkeypatch):
    built, lenient = _planted_study()
    submit_panel_ratings(study=built.study, lenient_user_id=lenient.pk, limit=30)
    watch_service.refresh_watch(study_id=built.study.pk)
    before = AgreementWatch.objects.get(study=built.study).summary

    def broken(*args, **kwargs):
        raise ValueError("column 'value' must be numeric")

    monkeypatch.setattr(watch_service, "watch_summary", broken)
    with pytest.raises(ValueError):
        watch_service.refresh_watch(study_id=built.study.pk)
    watch = AgreementWatch.objects.get(study=built.study)
    assert watch.summary == before
    assert watch.error == "ValueError: column 'value' must be numeric"
    assert watch.error_at is not None


@pytest.mark.celery_worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_refreshes_the_watch_as_ratings_arrive(tmp_path, settings) -> None:
    settings.MEDHELM_WATCH_DEBOUNCE_SECONDS = 1.0
    built, lenient = _planted_study()
    log = tmp_path / "worker.log"
    with running_worker(
        broker_url=settings.CELERY_BROKER_URL,
        result_backend=settings.CELERY_RESULT_BACKEND,
        log_path=log,
    ):
        submit_panel_ratings(study=built.study, lenient_user_id=lenient.pk)
        total = Assignment.objects.filter(
            study=built.study, status=Assignment.Status.SUBMITTED
        ).count()
        deadline = time.time() + 120
        while time.time() < deadline:
            watch = AgreementWatch.objects.get(study=built.study)
            if watch.submissions_seen == total and watch.requested_at is None:
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"no snapshot of all {total} submissions in 120 s:\n{log.read_text()}")
    assert watch.error == "", watch.error
    assert _flags(watch.summary)[pseudonym_of(built.study, lenient.pk)] == ["lenient"]
    lines = [line for line in log.read_text().splitlines() if "agreement.refresh_watch[" in line]
    # This study's refreshes, by their results: the process's broker may still hold messages
    # that earlier tests queued for studies deleted since (each ends "skipped").
    refreshes = [line for line in lines if f"{{'study': {built.study.pk}, 'submissions'" in line]
    # Debounced: each refresh covered many submissions.
    assert 1 <= len(refreshes) < total / 4, "\n".join(lines)


@pytest.mark.django_db
def test_a_refresh_queued_for_a_study_deleted_since_is_skipped():
    # a late message (the study was deleted after its last rating) ends quietly, writing nothing
    from agreement.services.watch import refresh_watch
    from annotation.models import AgreementWatch

    assert refresh_watch(study_id=987654) == {
        "study": 987654,
        "skipped": "the study no longer exists",
    }
    assert not AgreementWatch.objects.exists()
