"""Ratings and scores imports (long files) as import jobs, by the items import's rule.

The upload is stored (streamed to disk, never read whole) and becomes an ImportJob of kind
"ratings" or "scores"; a provably small one (uploads.StoredUpload.provably_small) is run in
the request, any other by a worker, with progress on the import page. jobs.run_import_job
claims, runs and fails both kinds alike; this module runs the long-file part: the importer
reads the stored file line by line, every error goes to the job's error file
(longerrors), and the job keeps the first SHOWN_ERRORS of them and the count.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from annotation.errors import LongFileRefused
from annotation.imports.longerrors import SHOWN_ERRORS, LineErrors, error_spool
from annotation.imports.longfile import LineCallback, LineError
from annotation.imports.progress import FINISHED, import_progress
from annotation.imports.uploads import release_upload
from annotation.models import ImportJob, RatingStudy
from medhelm_site.common import task_names
from medhelm_site.common.errors import DomainError

if TYPE_CHECKING:  # services import this package: no import of them at run time
    from annotation.services.rating_imports import LongImportSummary

LONG_KINDS = (ImportJob.Kind.RATINGS, ImportJob.Kind.SCORES)
# The Celery task that runs a queued job of each kind, by name: the scores importer lives in
# the jury, which annotation does not import.
TASKS = {
    ImportJob.Kind.RATINGS: task_names.RUN_IMPORT,
    ImportJob.Kind.SCORES: task_names.RUN_SCORE_IMPORT,
}
ProgressCallback = Callable[[ImportJob], None]


class LongImporter(Protocol):
    """services.import_ratings, jury.score_imports.import_scores."""

    def __call__(
        self,
        *,
        study: RatingStudy,
        data: bytes | IO[bytes],
        name: str,
        actor: AbstractBaseUser | None,
        errors: LineErrors | None = None,
        on_line: LineCallback | None = None,
    ) -> LongImportSummary: ...


def run_long_job(
    job: ImportJob, *, importer: LongImporter, on_progress: ProgressCallback | None
) -> ImportJob:
    """Run a claimed (running) job of a long file to its end: succeeded with the importer's
    summary, or failed with the first errors, their count and the complete error file."""
    errors = LineErrors(error_spool(job.pk))
    try:
        with (Path(settings.MEDIA_ROOT) / job.source_path).open("rb") as source:
            job.total_rows = _count_lines(source)
            job.save(update_fields=["total_rows"])
            progress = functools.partial(_record_progress, job, on_progress)
            progress(0)
            summary = importer(
                study=job.study,
                data=source,
                name=job.source_name,
                actor=job.created_by,
                errors=errors,
                on_line=progress,
            )
    except FileNotFoundError:
        reason = f"the uploaded file is missing from storage ({job.source_path})"
        return _failed(job, [{"where": "file", "line": 0, "column": "", "reason": reason}], 1)
    except LongFileRefused as exc:
        return _failed(job, [_entry(e) for e in exc.errors[:SHOWN_ERRORS]], exc.count)
    except DomainError as exc:  # the study was locked meanwhile (the jury raises its own type)
        entry = {"where": exc.field, "line": 0, "column": "", "reason": exc.message}
        return _failed(job, [entry], 1)
    finally:
        errors.close()
    job.status = ImportJob.Status.SUCCEEDED
    job.processed_rows = job.total_rows
    job.created_items, job.unchanged_items = summary.created, summary.unchanged
    job.summary = summary.as_dict()
    job.errors = []
    job.finished_at = timezone.now()
    job.save()
    transaction.on_commit(functools.partial(release_upload, job_id=job.pk))
    if on_progress is not None:
        on_progress(job)
    return job


def _count_lines(source: IO[bytes]) -> int:
    """The physical lines of the file (for the progress bar); the stream is put back."""
    count, last = 0, b"\n"
    for chunk in iter(functools.partial(source.read, 1024 * 1024), b""):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    source.seek(0)
    return count + (last != b"\n")


def _record_progress(job: ImportJob, on_progress: ProgressCallback | None, line: int) -> None:
    job.processed_rows = min(line, job.total_rows)
    ImportJob.objects.filter(pk=job.pk).update(processed_rows=job.processed_rows)
    if on_progress is not None:
        on_progress(job)


def _entry(error: LineError) -> dict[str, Any]:
    where = f"line {error.line}" if error.line else "file"
    return {"where": where, **error.as_dict()}


def _failed(job: ImportJob, entries: list[dict[str, Any]], count: int) -> ImportJob:
    """Mark the job failed with its first errors and, in one last entry, how many more."""
    if count > len(entries):
        rest = count - len(entries)
        entries.append({"where": "...", "reason": f"and {rest} more errors", "more": rest})
    job.status = ImportJob.Status.FAILED
    job.errors = entries
    job.created_items = job.unchanged_items = 0
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "errors", "created_items", "unchanged_items", "finished_at"])
    transaction.on_commit(functools.partial(release_upload, job_id=job.pk))
    return job


def long_import_progress(job: ImportJob) -> dict[str, Any]:
    """What the long import page shows of a job: import_progress, the first SHOWN_ERRORS
    errors by line and column, the summary of a succeeded import, and whether the complete
    error file can be downloaded."""
    listed = [e for e in job.errors or [] if "more" not in e]
    return {
        **import_progress(job),
        "lines": listed[:SHOWN_ERRORS],
        "summary": job.summary if job.status == ImportJob.Status.SUCCEEDED else None,
        "error_file": job.status in FINISHED and error_spool(job.pk).exists(),
    }
