"""A locked study refuses every write with one message, each app raising its own error type
(annotation: AnnotationError, jury: JuryError), and nothing changes. Each write path is
refused when the study was locked before it started, and the imports also when the study
is locked while their lines or rows are being checked (the recheck inside the saving
transaction)."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from annotation import imports, services
from annotation.errors import AnnotationError
from annotation.imports import jobs, pack_helm_run
from annotation.locking import locked_message
from annotation.models import (
    Assignment,
    AuditEvent,
    CalibrationItem,
    ImportedRating,
    ImportJob,
    Item,
    Rating,
    RatingStudy,
    StudyMembership,
)
from annotation.sample_models import SampleDraw
from jury.errors import JuryError
from jury.helm_verdicts import import_helm_verdicts
from jury.models import Judge, JudgeScore, MetricScore
from jury.score_imports import import_scores
from medhelm_site.common.errors import DomainError
from tests.factories import FULL_ANSWERS, StudyWithMembers, make_study_with_members

pytestmark = pytest.mark.django_db

HELM_RUN = Path(__file__).parent / "data" / "helm_run" / "medi_qa"
ITEMS = b'{"external_id": "new-1", "model": "m", "input": "q", "output": "a"}\n'
RATINGS = b"external_id,model,rater,criterion,value,comment\ncase-0000,model-a,ext-1,accuracy,4,\n"
SCORES = (
    b"external_id,model,kind,scorer,criterion,value,comment\n"
    b"case-0000,model-a,judge,outside-judge,accuracy,4,\n"
    b"case-0000,model-a,metric,bleu,,0.4,\n"
)
REFERENCE = {"accuracy": 4, "completeness": 3, "clarity": None}


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def built() -> StudyWithMembers:
    return make_study_with_members(n_items=6, n_clinicians=3, k=2)


def lock(built: StudyWithMembers) -> None:
    services.set_study_lock(study=built.study, locked=True, actor=built.coordinator)
    built.study.refresh_from_db()


def lock_meanwhile(built: StudyWithMembers) -> Callable[..., None]:
    """A progress callback that locks the study the first time it is called: the write has
    passed its first check and meets the lock at its recheck under the row lock."""

    def locker(*_args: object) -> None:
        RatingStudy.objects.filter(pk=built.study.pk, locked_at=None).update(
            locked_at=timezone.now()
        )

    return locker


def state(study: RatingStudy) -> dict[str, list]:
    """What a write could change, in a comparable form (the refusal's own job rows aside)."""
    return {
        "items": sorted(Item.objects.filter(study=study).values_list("pk", "external_id")),
        "assignments": sorted(
            Assignment.objects.filter(study=study).values_list(
                "pk", "item_id", "clinician_id", "status", "flagged", "time_spent_seconds"
            )
        ),
        "ratings": sorted(Rating.objects.values_list("pk", "value", "comment")),
        "imported": sorted(ImportedRating.objects.values_list("pk", "value")),
        "calibration": sorted(CalibrationItem.objects.values_list("pk", "item_id")),
        "draws": sorted(SampleDraw.objects.values_list("pk", flat=True)),
        "members": sorted(
            StudyMembership.objects.values_list("pk", "user_id", "role", "is_active", "pseudonym")
        ),
        "judge_scores": sorted(JudgeScore.objects.values_list("pk", "value")),
        "metric_scores": sorted(MetricScore.objects.values_list("pk", "value")),
        "judges": sorted(Judge.objects.values_list("name", flat=True)),
        "audit": sorted(
            AuditEvent.objects.exclude(action="import.start").values_list("pk", "action")
        ),
    }


# --- the writes that raise: (error type, what was refused, the write) -------------------------


def _draw(built: StudyWithMembers) -> None:
    services.draw_sample(study=built.study, actor=built.coordinator, keys=["category"], seed=1)


def _assign(built: StudyWithMembers) -> None:
    services.assign_items(study=built.study, actor=built.coordinator, seed=3)


def _mark_calibration(built: StudyWithMembers) -> None:
    item = Item.objects.filter(study=built.study).first()
    services.mark_calibration_item(
        study=built.study, item_id=item.pk, reference=REFERENCE, note="", actor=built.coordinator
    )


def _unmark_calibration(built: StudyWithMembers) -> None:
    calibration = CalibrationItem.objects.get(study=built.study)
    services.unmark_calibration_item(
        study=built.study, item_id=calibration.item_id, actor=built.coordinator
    )


def _assignment(built: StudyWithMembers) -> Assignment:
    return Assignment.objects.filter(study=built.study, clinician=built.clinicians[0]).first()


def _save_draft(built: StudyWithMembers) -> None:
    services.save_draft(
        assignment_id=_assignment(built).pk,
        clinician=built.clinicians[0],
        answers={"accuracy": FULL_ANSWERS["accuracy"]},
        time_spent_seconds=5,
    )


def _submit(built: StudyWithMembers) -> None:
    services.submit_assignment(
        assignment_id=_assignment(built).pk, clinician=built.clinicians[0], answers=FULL_ANSWERS
    )


def _flag(built: StudyWithMembers) -> None:
    services.flag_assignment(
        assignment_id=_assignment(built).pk,
        clinician=built.clinicians[0],
        flagged=True,
        reason="unclear",
    )


def _import_ratings(built: StudyWithMembers) -> None:
    services.import_ratings(study=built.study, data=RATINGS, name="r.csv", actor=built.coordinator)


def _import_ratings_locked_meanwhile(built: StudyWithMembers) -> None:
    services.import_ratings(
        study=built.study,
        data=RATINGS,
        name="r.csv",
        actor=built.coordinator,
        on_line=lock_meanwhile(built),
    )


def _start_long(kind: str, content: bytes) -> Callable[[StudyWithMembers], None]:
    importer = services.import_ratings if kind == "ratings" else import_scores

    def write(built: StudyWithMembers) -> None:
        imports.start_long_import(
            study=built.study,
            kind=kind,
            uploaded_name=f"{kind}.csv",
            content=content,
            actor=built.coordinator,
            importer=importer,
        )

    return write


def _start_items(built: StudyWithMembers) -> None:
    imports.start_import(
        study=built.study,
        uploaded_name="items.jsonl",
        content=ITEMS,
        file_format="jsonl",
        actor=built.coordinator,
    )


def _import_scores(built: StudyWithMembers) -> None:
    import_scores(study=built.study, data=SCORES, name="s.csv", actor=built.coordinator)


def _import_scores_locked_meanwhile(built: StudyWithMembers) -> None:
    import_scores(
        study=built.study,
        data=SCORES,
        name="s.csv",
        actor=built.coordinator,
        on_line=lock_meanwhile(built),
    )


@dataclass(frozen=True)
class Raising:
    error: type[DomainError]
    what: str
    write: Callable[[StudyWithMembers], None]
    prepare: Callable[[StudyWithMembers], None] | None = None
    locks_itself: bool = False  # the write locks the study while it runs (lock_meanwhile)


RAISING = {
    "draw_sample": Raising(AnnotationError, "sample", _draw),
    "assign_items": Raising(AnnotationError, "assignments", _assign),
    "mark_calibration_item": Raising(AnnotationError, "calibration items", _mark_calibration),
    "unmark_calibration_item": Raising(
        AnnotationError, "calibration items", _unmark_calibration, prepare=_mark_calibration
    ),
    "save_draft": Raising(AnnotationError, "ratings", _save_draft),
    "submit_assignment": Raising(AnnotationError, "ratings", _submit),
    "flag_assignment": Raising(AnnotationError, "ratings", _flag),
    "import_ratings": Raising(AnnotationError, "ratings", _import_ratings),
    "import_ratings, locked while read": Raising(
        AnnotationError, "ratings", _import_ratings_locked_meanwhile, locks_itself=True
    ),
    "start_long_import ratings": Raising(
        AnnotationError, "ratings", _start_long("ratings", RATINGS)
    ),
    "start_long_import scores": Raising(AnnotationError, "scores", _start_long("scores", SCORES)),
    "start_import items": Raising(AnnotationError, "items", _start_items),
    "jury import_scores": Raising(JuryError, "scores", _import_scores),
    "jury import_scores, locked while read": Raising(
        JuryError, "scores", _import_scores_locked_meanwhile, locks_itself=True
    ),
}


@pytest.mark.parametrize("path", list(RAISING))
def test_a_write_in_a_locked_study_raises_the_one_message_in_its_apps_type(built, path):
    case = RAISING[path]
    if case.prepare is not None:
        case.prepare(built)
    if not case.locks_itself:
        lock(built)
    before = state(built.study)

    with pytest.raises(DomainError) as info:
        case.write(built)

    assert type(info.value) is case.error
    assert info.value.as_dict() == {"study": [locked_message(what=case.what)]}
    assert state(built.study) == before


# --- the writes that record the refusal: import jobs and the HELM verdict report --------------


def _queued_job(built: StudyWithMembers, monkeypatch, kind: str, content: bytes) -> ImportJob:
    monkeypatch.setattr(jobs, "queue_import_job", lambda *args, **kwargs: None)
    if kind == ImportJob.Kind.ITEMS:
        return imports.start_import(
            study=built.study,
            uploaded_name="items.jsonl",
            content=content,
            file_format="jsonl",
            actor=built.coordinator,
            background=True,
        )
    return imports.start_long_import(
        study=built.study,
        kind=kind,
        uploaded_name=f"{kind}.csv",
        content=content,
        actor=built.coordinator,
        importer=services.import_ratings if kind == "ratings" else import_scores,
        background=True,
    )


@pytest.mark.parametrize(
    ("kind", "content"),
    [
        (ImportJob.Kind.ITEMS, ITEMS),
        (ImportJob.Kind.RATINGS, RATINGS),
        (ImportJob.Kind.SCORES, SCORES),
    ],
    ids=["items", "ratings", "scores"],
)
def test_a_job_whose_study_was_locked_while_it_waited_fails_with_the_message(
    built, monkeypatch, kind, content
):
    job = _queued_job(built, monkeypatch, kind, content)
    lock(built)
    before = state(built.study)

    job = imports.run_import_job(
        job_id=job.pk,
        long_importers={
            ImportJob.Kind.RATINGS: services.import_ratings,
            ImportJob.Kind.SCORES: import_scores,
        },
    )

    assert job.status == ImportJob.Status.FAILED
    assert [(e["where"], e["reason"]) for e in job.errors] == [("study", locked_message(what=kind))]
    assert state(built.study) == before


def test_an_items_job_locked_while_its_rows_were_checked_saves_nothing(built):
    before = state(built.study)

    job = imports.start_import(
        study=built.study,
        uploaded_name="items.jsonl",
        content=ITEMS,
        file_format="jsonl",
        actor=built.coordinator,
        background=False,
        on_progress=lock_meanwhile(built),
    )

    assert job.status == ImportJob.Status.FAILED
    assert [(e["where"], e["reason"]) for e in job.errors] == [
        ("study", locked_message(what="items"))
    ]
    assert state(built.study) == before


def _suite_zip(tmp_path: Path) -> bytes:
    """A suite of two HELM runs: the sample run, and a copy whose instances have new ids."""
    second = tmp_path / "second"
    second.mkdir()
    (second / "run_spec.json").write_bytes((HELM_RUN / "run_spec.json").read_bytes())
    scenario = json.loads((HELM_RUN / "scenario_state.json").read_text(encoding="utf-8"))
    for request_state in scenario["request_states"]:
        request_state["instance"]["id"] += "-again"
    (second / "scenario_state.json").write_text(json.dumps(scenario), encoding="utf-8")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for folder, source in (("suite/run_a", HELM_RUN), ("suite/run_b", second)):
            for name in ("run_spec.json", "scenario_state.json"):
                archive.write(source / name, f"{folder}/{name}")
    return out.getvalue()


def test_a_suite_locked_before_its_first_run_is_saved_saves_nothing(built, tmp_path):
    before = state(built.study)

    job = imports.start_import(
        study=built.study,
        uploaded_name="suite.zip",
        content=_suite_zip(tmp_path),
        file_format="helm",
        actor=built.coordinator,
        background=False,
        on_progress=lock_meanwhile(built),
    )

    assert job.status == ImportJob.Status.FAILED
    assert len(job.run_summaries) == 2
    refusals = [e for e in job.errors if e["reason"] == locked_message(what="items")]
    assert [e["where"].rsplit(": ", 1)[-1] for e in refusals] == ["study"], job.errors
    assert state(built.study) == before


def test_helm_verdicts_of_a_locked_study_are_refused_in_the_report(built):
    job = imports.start_import(
        study=built.study,
        uploaded_name="medi_qa:model=demo_vendor_demo-model-7b.zip",
        content=pack_helm_run(HELM_RUN),
        file_format="helm",
        actor=built.coordinator,
        background=False,
    )
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    lock(built)
    before = state(built.study)

    report = import_helm_verdicts(study=built.study, source=HELM_RUN, actor=built.coordinator)

    assert not report.saved
    assert [e.as_dict() for e in report.errors] == [
        {"where": "study", "reason": locked_message(what="verdicts")}
    ]
    assert state(built.study) == before


# --- the pages ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("page", "what", "content"),
    [("import/ratings/", "ratings", RATINGS), ("jury/import/scores/", "scores", SCORES)],
    ids=["ratings", "scores"],
)
def test_the_long_import_pages_of_a_locked_study_show_the_message(
    built, client, page, what, content
):
    lock(built)
    before = state(built.study)
    client.force_login(built.coordinator)

    upload = SimpleUploadedFile(f"{what}.csv", content, content_type="text/csv")
    response = client.post(f"/studies/{built.study.pk}/{page}", {"file": upload})

    assert response.status_code == 400
    assert locked_message(what=what) in response.content.decode()
    assert not ImportJob.objects.filter(study=built.study).exists()
    assert state(built.study) == before
