"""Who may import, and when: coordinators and staff, into an unlocked study, a non-empty file."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from annotation import imports, services
from annotation.errors import AnnotationError
from annotation.imports import jobs
from annotation.models import ImportJob, Item, StudyMembership
from tests.annotation.imports.factories import DATA, start
from tests.factories import UserFactory


def test_a_locked_study_refuses_imports(study, coordinator):
    study.locked_at = timezone.now()
    study.save(update_fields=["locked_at"])

    with pytest.raises(AnnotationError) as exc:
        start(study, coordinator, (DATA / "items.jsonl").read_bytes())

    assert exc.value.as_dict() == {
        "study": ["the study is locked: its items cannot change until a coordinator unlocks it"]
    }
    assert not ImportJob.objects.exists() and not Item.objects.exists()


def test_a_study_locked_while_the_job_waited_fails_the_job(study, coordinator, monkeypatch):
    monkeypatch.setattr(jobs, "queue_import_job", lambda job_id: None)
    job = start(study, coordinator, (DATA / "items.jsonl").read_bytes(), background=True)
    study.locked_at = timezone.now()
    study.save(update_fields=["locked_at"])

    job = imports.run_import_job(job_id=job.pk)

    assert job.status == ImportJob.Status.FAILED
    assert job.errors == [
        {
            "where": "study",
            "reason": "the study is locked: its items cannot change until a coordinator unlocks it",
        }
    ]
    assert not Item.objects.exists()


def test_only_coordinators_or_staff_may_import(study, coordinator):
    clinician = UserFactory()
    services.add_member(
        study=study, user=clinician, role=StudyMembership.Role.CLINICIAN, actor=coordinator
    )
    with pytest.raises(PermissionDenied, match="only a coordinator of this study"):
        start(study, clinician, (DATA / "items.jsonl").read_bytes())
    staff = UserFactory(is_staff=True)
    assert start(study, staff, (DATA / "items.jsonl").read_bytes()).created_items == 3


def test_empty_upload_and_unknown_format_are_refused(study, coordinator, media_root):
    with pytest.raises(AnnotationError, match=r"the file items\.jsonl is empty"):
        start(study, coordinator, b"")
    with pytest.raises(AnnotationError, match="unknown format 'xlsx'"):
        start(study, coordinator, b"x", file_format="xlsx")
    assert not ImportJob.objects.exists()
    assert list((media_root / "imports").iterdir()) == []
