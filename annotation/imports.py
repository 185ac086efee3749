"""Item imports: store the upload, run the job (inline or as a Celery task), report progress.

An import is all-or-nothing: every row is checked first and every problem is recorded on the
job; items are saved only when there is none, in one transaction. Importing the same
(external_id, model) with the same texts again changes nothing ("unchanged"); with different
texts it is an error, because an import never edits an existing item.

Progress: processed_rows counts checked rows and is committed every PROGRESS_EVERY rows. The
save itself is one transaction, so nothing of it can be seen (or committed as progress) until
it ends; import_progress calls that phase "saving".

Warnings (empty outputs, skipped HELM request states) are kept in job.errors as entries with
"level": "warning", since ImportJob has no field of its own for them; import_progress
separates them. Errors beyond MAX_STORED_ERRORS are counted in one last entry with "more".
"""

from __future__ import annotations

import functools
import logging
import os
import tempfile
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from celery import current_app
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from annotation import audit, importers
from annotation.importers import Fingerprint, RowError
from annotation.models import ImportJob, Item, RatingStudy, StudyMembership
from annotation.services import create_items
from delphi.models import TaxonomyNode

logger = logging.getLogger(__name__)

# Below this size an import runs inline when the caller leaves `background` to us.
INLINE_MAX_BYTES = 1_000_000
PROGRESS_EVERY = 2000
MAX_STORED_ERRORS = 200
UPLOAD_DIR = "imports"
FINISHED = (ImportJob.Status.SUCCEEDED, ImportJob.Status.FAILED)
ProgressCallback = Callable[[ImportJob], None]


# --- start -----------------------------------------------------------------------------------


def _check_may_import(*, study: RatingStudy, actor: AbstractBaseUser) -> None:
    if study.is_locked:
        raise ValidationError({"study": "the study is locked; items can no longer be imported"})
    if getattr(actor, "is_staff", False) or getattr(actor, "is_superuser", False):
        return
    is_coordinator = StudyMembership.objects.filter(
        study=study, user=actor, role=StudyMembership.Role.COORDINATOR, is_active=True
    ).exists()
    if not is_coordinator:
        raise PermissionDenied("only a coordinator of this study may import items")


def _upload_extension(file_format: str, head: bytes) -> str:
    if file_format == "helm":
        return "zip" if head.startswith(importers.ZIP_MAGIC) else "json"
    return file_format


def _chunks(content: bytes | IO[bytes]) -> Iterable[bytes]:
    if isinstance(content, bytes | bytearray | memoryview):
        yield bytes(content)
    elif hasattr(content, "chunks"):  # a Django UploadedFile
        yield from content.chunks()
    else:
        yield from iter(functools.partial(content.read, 1024 * 1024), b"")


def _store_upload(*, content: bytes | IO[bytes], file_format: str) -> tuple[str, int]:
    """Write the upload under MEDIA_ROOT/imports/ atomically (temp file, then rename) and
    return its path relative to MEDIA_ROOT and its size."""
    folder = Path(settings.MEDIA_ROOT) / UPLOAD_DIR
    folder.mkdir(parents=True, exist_ok=True)
    size = 0
    head = b""
    fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=".upload-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in _chunks(content):
                if len(head) < 4:
                    head += chunk[:4]
                out.write(chunk)
                size += len(chunk)
            out.flush()
            os.fsync(out.fileno())
        name = f"{uuid.uuid4().hex}.{_upload_extension(file_format, head)}"
        os.replace(tmp_name, folder / name)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return f"{UPLOAD_DIR}/{name}", size


def _dispatch(job_id: int) -> None:
    # Imported here: tasks.py imports this module.
    from annotation.tasks import run_import

    try:
        run_import.delay(job_id)
    except Exception as exc:
        # The job is committed already; without this it would wait as "queued" forever.
        logger.exception("could not queue import job %s", job_id)
        ImportJob.objects.filter(pk=job_id, status=ImportJob.Status.QUEUED).update(
            status=ImportJob.Status.FAILED,
            errors=[{"where": "import", "reason": f"could not queue the import: {exc}"}],
            finished_at=timezone.now(),
        )


def start_import(
    *,
    study: RatingStudy,
    uploaded_name: str,
    content: bytes | IO[bytes],
    file_format: str,
    actor: AbstractBaseUser,
    background: bool | None = None,
    on_progress: ProgressCallback | None = None,
) -> ImportJob:
    """Store an upload and create its ImportJob; run it now or queue annotation.run_import.

    `background=None` runs files below INLINE_MAX_BYTES inline and queues larger ones;
    True/False force either. Raises ValidationError (unknown format, locked study, empty
    file) or PermissionDenied (not a coordinator or staff). An inline run returns the
    finished job; a queued one returns it queued (the task starts after the commit).
    """
    if file_format not in importers.FORMATS:
        raise ValidationError(
            {"file_format": f"unknown format {file_format!r}; use jsonl, csv or helm"}
        )
    _check_may_import(study=study, actor=actor)
    source_path, size = _store_upload(content=content, file_format=file_format)
    if size == 0:
        (Path(settings.MEDIA_ROOT) / source_path).unlink(missing_ok=True)
        raise ValidationError({"file": "the file is empty"})
    in_background = size >= INLINE_MAX_BYTES if background is None else background
    with transaction.atomic():
        job = ImportJob.objects.create(
            study=study,
            created_by=actor,
            file_format=file_format,
            source_name=uploaded_name[:300],
            source_path=source_path,
        )
        audit.record(
            actor=actor,
            action="import.start",
            target=job,
            study=study,
            after={
                "file_format": file_format,
                "source_name": job.source_name,
                "bytes": size,
                "background": in_background,
            },
        )
        if in_background:
            transaction.on_commit(functools.partial(_dispatch, job.pk))
    if in_background:
        return job
    return run_import_job(job_id=job.pk, on_progress=on_progress, inline=True)


# --- run -------------------------------------------------------------------------------------


def task_names_for(*, study: RatingStudy) -> dict[str, int] | None:
    """Node names of the study's taxonomy version -> node id; None without a version.

    A name used by several nodes resolves as services.taxonomy_node_for does: a task before a
    subcategory before a category, then the first in the version's node order.
    """
    if study.taxonomy_version_id is None:
        return None
    rank = {
        TaxonomyNode.Kind.TASK: 0,
        TaxonomyNode.Kind.SUBCATEGORY: 1,
        TaxonomyNode.Kind.CATEGORY: 2,
    }
    best: dict[str, tuple[int, int, int]] = {}
    nodes = TaxonomyNode.objects.filter(version_id=study.taxonomy_version_id).values_list(
        "name", "kind", "id"
    )
    for order, (name, kind, node_id) in enumerate(nodes):
        candidate = (rank[kind], order, node_id)
        best[name] = min(best.get(name, candidate), candidate)
    return {name: node_id for name, (_rank, _order, node_id) in best.items()}


def _fingerprints(
    *, study: RatingStudy, keys: set[tuple[str, str]]
) -> dict[tuple[str, str], Fingerprint]:
    """item_fingerprint of the study's items whose (external_id, model) is in `keys`."""
    found: dict[tuple[str, str], Fingerprint] = {}
    if not keys:
        return found
    items = Item.objects.filter(study=study)
    if len(keys) <= 1000:  # a small re-import need not read the whole study
        items = items.filter(external_id__in={external_id for external_id, _ in keys})
    rows = (
        items.values_list(
            "external_id", "model_name", "input_text", "output_text", "reference_text"
        )
        .order_by()
        .iterator(chunk_size=2000)
    )
    for external_id, model_name, input_text, output_text, reference_text in rows:
        if (external_id, model_name) in keys:
            found[(external_id, model_name)] = importers.item_fingerprint(
                input_text=input_text, output_text=output_text, reference_text=reference_text
            )
    return found


def _stored_messages(errors: Sequence[RowError], warnings: Sequence[RowError]) -> list[dict]:
    stored: list[dict[str, Any]] = [e.as_dict() for e in errors[:MAX_STORED_ERRORS]]
    if len(errors) > MAX_STORED_ERRORS:
        rest = len(errors) - MAX_STORED_ERRORS
        stored.append({"where": "...", "reason": f"and {rest} more errors", "more": rest})
    stored += [{**w.as_dict(), "level": "warning"} for w in warnings[:MAX_STORED_ERRORS]]
    if len(warnings) > MAX_STORED_ERRORS:
        rest = len(warnings) - MAX_STORED_ERRORS
        stored.append(
            {
                "where": "...",
                "reason": f"and {rest} more warnings",
                "more": rest,
                "level": "warning",
            }
        )
    return stored


def _finish_failed(
    job: ImportJob, errors: Sequence[RowError], warnings: Sequence[RowError]
) -> ImportJob:
    job.status = ImportJob.Status.FAILED
    job.errors = _stored_messages(errors, warnings)
    job.created_items = job.unchanged_items = 0
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "errors", "created_items", "unchanged_items", "finished_at"])
    return job


def _claim(job_id: int) -> tuple[ImportJob, bool]:
    """Lock the job and mark it running; (job, False) when it has finished already."""
    with transaction.atomic():
        job = ImportJob.objects.select_for_update().get(pk=job_id)
        if job.status in FINISHED:
            return job, False
        # Queued, or "running" after a worker died: start from the beginning. Nothing of an
        # interrupted run was saved, because items are saved in the last transaction only.
        job.status = ImportJob.Status.RUNNING
        job.total_rows = job.processed_rows = job.created_items = job.unchanged_items = 0
        job.errors = []
        job.finished_at = None
        job.save()
        return job, True


def run_import_job(
    *, job_id: int, on_progress: ProgressCallback | None = None, inline: bool = False
) -> ImportJob:
    """Run one import job to its end. Idempotent: a finished job is returned as it is, and a
    job left "running" by a crashed worker starts again. Raises ImportJob.DoesNotExist for an
    unknown id. An unexpected exception marks the job failed (with the message) and is
    re-raised."""
    job, claimed = _claim(job_id)
    if not claimed:
        return job
    try:
        return _run(job, on_progress, inline=inline)
    except Exception as exc:
        try:
            ImportJob.objects.filter(pk=job.pk, status=ImportJob.Status.RUNNING).update(
                status=ImportJob.Status.FAILED,
                errors=[{"where": "import", "reason": f"unexpected error: {exc!r}"}],
                finished_at=timezone.now(),
            )
        except Exception:
            # Left "running": a retried task then starts it again.
            logger.exception("could not mark import job %s failed", job.pk)
        raise


def _run(job: ImportJob, on_progress: ProgressCallback | None, *, inline: bool) -> ImportJob:
    study = job.study
    if study.is_locked:
        locked = RowError("study", "the study is locked; items can no longer be imported")
        return _finish_failed(job, [locked], [])
    path = Path(settings.MEDIA_ROOT) / job.source_path
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        missing = RowError("file", f"the uploaded file is missing from storage ({job.source_path})")
        return _finish_failed(job, [missing], [])
    parsed = importers.parse(
        file_format=job.file_format, source=data, name_hint=Path(job.source_name).stem
    )
    del data
    job.total_rows = parsed.total
    job.save(update_fields=["total_rows"])

    def progress(done: int) -> None:
        job.processed_rows = done
        ImportJob.objects.filter(pk=job.pk).update(processed_rows=done)
        if on_progress is not None:
            on_progress(job)

    if on_progress is not None:
        on_progress(job)
    keys = {row.key for row in parsed.rows}
    existing_keys = set(Item.objects.filter(study=study).values_list("external_id", "model_name"))
    snapshot = _fingerprints(study=study, keys=keys & existing_keys)
    rows, errors = importers.validate_rows(
        parsed=parsed,
        task_names=task_names_for(study=study),
        existing=snapshot,
        progress=progress,
        progress_every=PROGRESS_EVERY,
    )
    if errors:
        return _finish_failed(job, errors, parsed.warnings)
    with transaction.atomic():
        study = RatingStudy.objects.select_for_update().get(pk=job.study_id)
        current = ImportJob.objects.select_for_update().get(pk=job.pk)
        if current.status != ImportJob.Status.RUNNING:
            return current  # another worker finished this job while we checked it
        if study.is_locked:
            locked = RowError("study", "the study is locked; items can no longer be imported")
            return _finish_failed(job, [locked], parsed.warnings)
        # Items added by someone else since the snapshot: check those for conflicts too.
        now_keys = set(Item.objects.filter(study=study).values_list("external_id", "model_name"))
        late = (now_keys - existing_keys) & keys
        if late:
            fresh = _fingerprints(study=study, keys=late)
            late_errors = [
                RowError(row.where, reason, row.order)
                for row in parsed.rows
                if row.key in fresh
                and (reason := importers.conflict_reason(row, fresh[row.key])) is not None
            ]
            if late_errors:
                return _finish_failed(job, late_errors, parsed.warnings)
        result = create_items(study=study, rows=rows, actor=job.created_by)
        job.status = ImportJob.Status.SUCCEEDED
        job.processed_rows = job.total_rows
        job.created_items = result.created
        job.unchanged_items = result.unchanged
        job.errors = _stored_messages([], parsed.warnings)
        job.finished_at = timezone.now()
        job.save()
        transaction.on_commit(functools.partial(_after_import, job.pk, inline=inline))
    if on_progress is not None:
        on_progress(job)
    return job


def _after_import(job_id: int, *, inline: bool) -> None:
    """Run the follow-up tasks of a succeeded import (settings.MEDHELM_AFTER_IMPORT_TASKS) by
    name, so that annotation never imports the apps that provide them (e.g. the jury's HELM
    verdict import): in this process for an inline import, else queued. A failure is logged;
    the import itself has succeeded."""
    for name in settings.MEDHELM_AFTER_IMPORT_TASKS:
        try:
            signature = current_app.signature(name, args=[job_id])
            if inline:
                result = signature.apply()
                if result.failed():
                    logger.error(
                        "after-import task %s of job %s failed: %r", name, job_id, result.result
                    )
            else:
                signature.apply_async()
        except Exception:
            logger.exception("could not run after-import task %s of job %s", name, job_id)


# --- progress --------------------------------------------------------------------------------


def _listed(entry: dict[str, Any]) -> dict[str, str]:
    return {"where": entry["where"], "reason": entry["reason"]}


def import_progress(job: ImportJob) -> dict[str, Any]:
    """What a page or API polls: status, phase, counts, percent, the first 50 errors."""
    entries = job.errors or []
    errors = [e for e in entries if e.get("level") != "warning"]
    warnings = [e for e in entries if e.get("level") == "warning"]
    error_count = sum(e.get("more", 1) for e in errors)
    warning_count = sum(e.get("more", 1) for e in warnings)
    total, processed = job.total_rows, job.processed_rows
    if job.status == ImportJob.Status.QUEUED:
        phase, percent = "queued", 0
    elif job.status == ImportJob.Status.RUNNING:
        phase = "saving" if total and processed >= total else "checking"
        # 100 only once it has succeeded: the save after the checks takes time too.
        percent = min(99, 100 * processed // total) if total else 0
    else:
        phase, percent = "done", 100
    return {
        "id": job.pk,
        "status": job.status,
        "phase": phase,
        "processed": processed,
        "total": total,
        "percent": percent,
        "created": job.created_items,
        "unchanged": job.unchanged_items,
        "errors": [_listed(e) for e in errors if "more" not in e][:50],
        "error_count": error_count,
        "warnings": [_listed(w) for w in warnings if "more" not in w][:50],
        "warning_count": warning_count,
        "finished": job.status in FINISHED,
    }
