"""Import jobs: store the upload, run the job (inline or as a Celery task). Items, and long
files of ratings or scores (start_long_import; their run is long_jobs.run_long_job).

An import is all-or-nothing: every row is checked first and every problem is recorded on the
job; items are saved only when there is none, in one transaction. processed_rows counts
checked rows and is committed every PROGRESS_EVERY rows; the save itself shows no progress
until it ends (import_progress calls that phase "saving"). After a succeeded save the steps
after an import run (after_import.py), and after them the upload is deleted; a failed job's
upload is deleted at once (uploads.release_upload). A job runs inside the web request only
when its upload is provably small (uploads.StoredUpload.provably_small).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO

from celery import current_app
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from annotation import audit
from annotation.errors import AnnotationError
from annotation.imports.after_import import run_after_import_steps
from annotation.imports.formats import (
    AUTO,
    FORMATS,
    LABELS,
    MISMATCH,
    detect_format,
    parse,
    peek,
)
from annotation.imports.job_state import Key
from annotation.imports.job_state import fingerprints as _fingerprints
from annotation.imports.job_state import finish_failed as _finish_failed
from annotation.imports.job_state import item_keys as _item_keys
from annotation.imports.job_state import late_conflicts as _late_conflicts
from annotation.imports.long_jobs import LONG_KINDS, LongImporter, run_long_job
from annotation.imports.long_jobs import TASKS as LONG_TASKS
from annotation.imports.longfile import detect_format as detect_long_format
from annotation.imports.placement import place_by_benchmark
from annotation.imports.progress import FINISHED, stored_messages
from annotation.imports.rows import ParsedImport, RowError
from annotation.imports.suite_jobs import run_suite_job, stored_suite
from annotation.imports.uploads import release_upload, store_upload
from annotation.imports.validation import (
    validate_rows,
)
from annotation.locking import lock_refusal, refuse_if_locked
from annotation.models import ImportJob, RatingStudy, StudyMembership
from annotation.selectors.taxonomy import task_names_for
from annotation.services import ItemRow, create_items
from medhelm_site.common import task_names

logger = logging.getLogger(__name__)

PROGRESS_EVERY = 2000
# The Celery task that runs a queued job (annotation.tasks.run_import).
RUN_IMPORT_TASK = task_names.RUN_IMPORT
# What a file of each format holds one item per, for "the file ... holds no ...".
_RECORDS = {"jsonl": "JSON lines", "csv": "records below its header row", "helm": "request states"}
ProgressCallback = Callable[[ImportJob], None]


# --- start -------------------------------------------------------------------------------------


def start_import(
    *,
    study: RatingStudy,
    uploaded_name: str,
    content: bytes | IO[bytes],
    file_format: str,
    actor: AbstractBaseUser,
    background: bool | None = None,
    on_progress: ProgressCallback | None = None,
    on_bad_run: str = ImportJob.OnBadRun.REFUSE,
    helm_completions: str = ImportJob.Completions.FIRST,
) -> ImportJob:
    """Store an upload and create its ImportJob; run it now or queue annotation.run_import.

    `background=None` runs a provably small upload inline (uploads.StoredUpload.
    provably_small) and queues any other; True/False force either. `on_bad_run` says what a
    suite (a zip of several HELM runs) does with a bad run: "refuse" the whole suite, or
    "skip" the run (imports.suite_jobs); `helm_completions` what a HELM request with several
    completions gives: its "first" completion, or "each" as an item of its own. Raises AnnotationError
    (unknown format, locked study, a file above the upload limit, empty or of whitespace
    only) or PermissionDenied (not a coordinator or staff). An inline run returns the
    finished job; a queued one returns it queued (the task starts after the commit).
    """
    if file_format not in (*FORMATS, AUTO):
        raise AnnotationError(
            f"unknown format {file_format!r}; use auto, jsonl, csv or helm", field="file_format"
        )
    if on_bad_run not in ImportJob.OnBadRun.values:
        raise AnnotationError(
            f"unknown choice for a bad run of a suite {on_bad_run!r}; use refuse or skip",
            field="on_bad_run",
        )
    if helm_completions not in ImportJob.Completions.values:
        raise AnnotationError(
            f"unknown choice of completions {helm_completions!r}; use first or each",
            field="helm_completions",
        )
    _check_may_import(study=study, actor=actor)
    file_format, format_note = _settle_format(file_format, name=uploaded_name, content=content)
    upload = store_upload(content=content, name=uploaded_name, file_format=file_format)
    if upload.size == 0 or upload.blank:
        upload.absolute.unlink(missing_ok=True)
        what = "is empty" if upload.size == 0 else "holds only whitespace"
        raise AnnotationError(f"the file {uploaded_name} {what}: nothing to import", field="file")
    try:
        in_background = not upload.provably_small() if background is None else background
    except BaseException:
        upload.absolute.unlink(missing_ok=True)
        raise
    with transaction.atomic():
        job = ImportJob.objects.create(
            study=study,
            created_by=actor,
            file_format=file_format,
            format_note=format_note[:300],
            source_name=uploaded_name[:300],
            source_path=upload.path,
            on_bad_run=on_bad_run,
            helm_completions=helm_completions,
        )
        audit.record(
            actor=actor,
            action="import.start",
            target=job,
            study=study,
            after={
                "file_format": file_format,
                "format_note": job.format_note,
                "source_name": job.source_name,
                "bytes": upload.size,
                "background": in_background,
                "on_bad_run": on_bad_run,
                "helm_completions": helm_completions,
            },
        )
        if in_background:
            transaction.on_commit(functools.partial(queue_import_job, job.pk))
    if in_background:
        return job
    return run_import_job(job_id=job.pk, on_progress=on_progress, inline=True)


def start_long_import(
    *,
    study: RatingStudy,
    kind: str,
    uploaded_name: str,
    content: bytes | IO[bytes],
    actor: AbstractBaseUser,
    importer: LongImporter,
    background: bool | None = None,
) -> ImportJob:
    """Store an upload of ratings or scores and create its job; run it now when it is
    provably small (or `background` is False), else queue TASKS[kind] after the commit.
    Raises AnnotationError for a locked study or a file above the upload limit. An inline
    run returns the finished job, a queued one the job as queued."""
    if kind not in LONG_KINDS:
        raise AnnotationError(f"unknown kind of long import {kind!r}", field="kind")
    refuse_if_locked(study=study, error=AnnotationError, what=kind)
    file_format = detect_long_format(name=uploaded_name, data=content)
    upload = store_upload(content=content, name=uploaded_name, file_format=file_format)
    in_background = not upload.provably_small() if background is None else background
    with transaction.atomic():
        job = ImportJob.objects.create(
            study=study,
            kind=kind,
            created_by=actor,
            file_format=file_format,
            source_name=uploaded_name[:300],
            source_path=upload.path,
        )
        audit.record(
            actor=actor,
            action="import.start",
            target=job,
            study=study,
            after={
                "kind": kind,
                "file_format": file_format,
                "source_name": job.source_name,
                "bytes": upload.size,
                "background": in_background,
            },
        )
        if in_background:
            transaction.on_commit(
                functools.partial(queue_import_job, job.pk, task=LONG_TASKS[kind])
            )
    if in_background:
        return job
    return run_import_job(job_id=job.pk, inline=True, long_importers={kind: importer})


def _settle_format(chosen: str, *, name: str, content: bytes | IO[bytes]) -> tuple[str, str]:
    """The format to read the upload in and a note of how it was settled: detected from
    the content and name (chosen == AUTO), or the coordinator's choice, with a warning when
    the content looks like another format."""
    detection = detect_format(name=name, head=peek(content))
    if chosen == AUTO:
        return (
            detection.file_format,
            f"{LABELS[detection.file_format]}, detected {detection.reason}",
        )
    note = f"{LABELS[chosen]}, as chosen"
    if detection.from_content and detection.file_format != chosen:
        evidence = detection.reason.removeprefix("from the content: ")
        note += (
            f"; {MISMATCH} {LABELS[detection.file_format]} ({evidence}). "
            f'Choose "Detect from the file" to read it as {LABELS[detection.file_format]}'
        )
    return chosen, note


def queue_import_job(job_id: int, *, task: str = RUN_IMPORT_TASK) -> None:
    """Send a committed job to a worker (`task`: the one for its kind); if that fails, mark it
    failed rather than leave it "queued" forever."""
    try:
        # Sent by name: annotation.tasks imports this package, not the other way round.
        current_app.send_task(task, args=[job_id])
    except Exception as exc:
        logger.exception("could not queue import job %s", job_id)
        failed = ImportJob.objects.filter(pk=job_id, status=ImportJob.Status.QUEUED).update(
            status=ImportJob.Status.FAILED,
            errors=[{"where": "import", "reason": f"could not queue the import: {exc}"}],
            finished_at=timezone.now(),
        )
        if failed:
            release_upload(job_id=job_id)


def _check_may_import(*, study: RatingStudy, actor: AbstractBaseUser) -> None:
    refuse_if_locked(study=study, error=AnnotationError, what="items")
    if getattr(actor, "is_staff", False) or getattr(actor, "is_superuser", False):
        return
    is_coordinator = StudyMembership.objects.filter(
        study=study, user=actor, role=StudyMembership.Role.COORDINATOR, is_active=True
    ).exists()
    if not is_coordinator:
        raise PermissionDenied("only a coordinator of this study may import items")


# --- run ---------------------------------------------------------------------------------------


def run_import_job(
    *,
    job_id: int,
    on_progress: ProgressCallback | None = None,
    inline: bool = False,
    long_importers: Mapping[str, LongImporter] | None = None,
) -> ImportJob:
    """Run one import job to its end. Idempotent: a finished job is returned as it is, and a
    job left "running" by a crashed worker starts again. Raises ImportJob.DoesNotExist for an
    unknown id. An unexpected exception marks the job failed (with the message) and is
    re-raised. A job of ratings or scores is run by the importer `long_importers` names for
    its kind: annotation's task passes the ratings importer, the jury's its scores importer
    (annotation does not import the jury)."""
    job, claimed = _claim(job_id)
    if not claimed:
        return job
    try:
        if job.kind in LONG_KINDS:
            importer = (long_importers or {}).get(job.kind)
            if importer is None:
                raise RuntimeError(f"a job of {job.kind} is run by the task {LONG_TASKS[job.kind]}")
            return run_long_job(job, importer=importer, on_progress=on_progress)
        return _run(job, on_progress, inline=inline)
    except Exception as exc:
        try:
            failed = ImportJob.objects.filter(pk=job.pk, status=ImportJob.Status.RUNNING).update(
                status=ImportJob.Status.FAILED,
                errors=[{"where": "import", "reason": f"unexpected error: {exc!r}"}],
                finished_at=timezone.now(),
            )
        except Exception:
            # Left "running", with its upload: a retried task then starts it again.
            logger.exception("could not mark import job %s failed", job.pk)
        else:
            if failed:
                transaction.on_commit(functools.partial(release_upload, job_id=job.pk))
        raise


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
        job.runs_total = job.runs_checked = job.runs_done = 0
        job.run_summaries = []
        job.summary = {}
        job.save()
        return job, True


def _run(job: ImportJob, on_progress: ProgressCallback | None, *, inline: bool) -> ImportJob:
    """Read the upload, check every row, then save them all or record every problem."""
    study = job.study
    if (refusal := lock_refusal(study=study, what="items")) is not None:
        return _finish_failed(job, [RowError("study", refusal)], [])
    suite = stored_suite(job)
    if suite is not None:
        with suite:
            return run_suite_job(job, suite, on_progress, inline=inline)
    try:
        parsed = _parse_upload(job)
    except FileNotFoundError:
        reason = f"the uploaded file is missing from storage ({job.source_path})"
        return _finish_failed(job, [RowError("file", reason)], [])
    if parsed.total == 0 and not parsed.errors:
        # Nothing to import is a mistake to report, not "0 items imported".
        reason = f"the file {job.source_name} holds no {_RECORDS[job.file_format]}"
        return _finish_failed(job, [RowError("file", reason)], parsed.warnings)
    if job.file_format == "helm":
        place_by_benchmark(parsed, task_names_for(study=study))
    job.total_rows = parsed.total
    job.save(update_fields=["total_rows"])
    if on_progress is not None:
        on_progress(job)
    known = _item_keys(study)
    rows, errors = validate_rows(
        parsed=parsed,
        task_names=task_names_for(study=study),
        existing=_fingerprints(study=study, keys={row.key for row in parsed.rows} & known),
        progress=functools.partial(_record_progress, job, on_progress),
        progress_every=PROGRESS_EVERY,
    )
    if errors:
        return _finish_failed(job, errors, parsed.warnings)
    job, saved = _save_items(job, parsed, rows, known=known, inline=inline)
    if saved and on_progress is not None:
        on_progress(job)
    return job


def _parse_upload(job: ImportJob) -> ParsedImport:
    """Parse the stored upload. A HELM zip is read from the file in place (under the zip
    limits), any other upload whole: its size is within the upload limit."""
    with (Path(settings.MEDIA_ROOT) / job.source_path).open("rb") as stored:
        return parse(
            file_format=job.file_format,
            source=stored,
            name_hint=Path(job.source_name).stem,
            label=job.source_name,
            completions=job.helm_completions,
        )


def _record_progress(job: ImportJob, on_progress: ProgressCallback | None, done: int) -> None:
    job.processed_rows = done
    ImportJob.objects.filter(pk=job.pk).update(processed_rows=done)
    if on_progress is not None:
        on_progress(job)


def _save_items(
    job: ImportJob, parsed: ParsedImport, rows: list[ItemRow], *, known: set[Key], inline: bool
) -> tuple[ImportJob, bool]:
    """Save the checked rows in one transaction, unless the job, the study or its items
    changed meanwhile; (the job, whether the items were saved)."""
    with transaction.atomic():
        study = RatingStudy.objects.select_for_update().get(pk=job.study_id)
        current = ImportJob.objects.select_for_update().get(pk=job.pk)
        if current.status != ImportJob.Status.RUNNING:
            return current, False  # another worker finished this job while we checked it
        if (refusal := lock_refusal(study=study, what="items")) is not None:
            return _finish_failed(job, [RowError("study", refusal)], parsed.warnings), False
        late_errors = _late_conflicts(study, parsed, known=known)
        if late_errors:
            return _finish_failed(job, late_errors, parsed.warnings), False
        result = create_items(study=study, rows=rows, actor=job.created_by)
        job.status = ImportJob.Status.SUCCEEDED
        job.processed_rows = job.total_rows
        job.created_items = result.created
        job.unchanged_items = result.unchanged
        job.errors = stored_messages([], parsed.warnings)
        job.finished_at = timezone.now()
        job.save()
        transaction.on_commit(
            functools.partial(run_after_import_steps, job_id=job.pk, inline=inline)
        )
    return job, True
