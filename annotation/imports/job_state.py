"""What the single-run and suite import jobs share: the study's item keys and
fingerprints, late conflicts, and marking a job failed."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from annotation.imports.progress import stored_messages
from annotation.imports.rows import ParsedImport, RowError
from annotation.imports.uploads import release_upload
from annotation.imports.validation import Fingerprint, conflict_reason, item_fingerprint
from annotation.models import ImportJob, Item, RatingStudy
from medhelm_site.common.querying import ID_FILTER_LIMIT

Key = tuple[str, str]  # (external_id, model)


def late_conflicts(study: RatingStudy, parsed: ParsedImport, *, known: set[Key]) -> list[RowError]:
    """Conflicts with items someone else added since the rows were checked."""
    keys = {row.key for row in parsed.rows}
    late = (item_keys(study, external_ids={key[0] for key in keys}) - known) & keys
    if not late:
        return []
    fresh = fingerprints(study=study, keys=late)
    return [
        RowError(row.where, reason, row.order)
        for row in parsed.rows
        if row.key in fresh and (reason := conflict_reason(row, fresh[row.key])) is not None
    ]


def item_keys(study: RatingStudy, *, external_ids: set[str] | None = None) -> set[Key]:
    """The study's (external_id, model) keys; those of `external_ids` only, when given and
    few enough to filter on (else all of them)."""
    items = Item.objects.filter(study=study)
    if external_ids is not None and len(external_ids) <= ID_FILTER_LIMIT:
        items = items.filter(external_id__in=external_ids)
    # No ORDER BY (Item's default is study, id): to return rows in id order SQLite walks every
    # item of the study instead of the (study, external_id, model) index, so a suite's
    # late-conflict check grew with the items its earlier runs had saved.
    return set(items.values_list("external_id", "model_name").order_by())


def fingerprints(*, study: RatingStudy, keys: set[Key]) -> dict[Key, Fingerprint]:
    """item_fingerprint of the study's items whose (external_id, model) is in `keys`."""
    found: dict[Key, Fingerprint] = {}
    if not keys:
        return found
    items = Item.objects.filter(study=study)
    if len(keys) <= ID_FILTER_LIMIT:  # a small re-import need not read the whole study
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
            found[(external_id, model_name)] = item_fingerprint(
                input_text=input_text, output_text=output_text, reference_text=reference_text
            )
    return found


def finish_failed(
    job: ImportJob, errors: Sequence[RowError], warnings: Sequence[RowError]
) -> ImportJob:
    """Mark the job failed with its errors; its upload goes once this is committed (no step
    follows a failed import)."""
    job.status = ImportJob.Status.FAILED
    job.errors = stored_messages(errors, warnings)
    job.created_items = job.unchanged_items = 0
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "errors", "created_items", "unchanged_items", "finished_at"])
    transaction.on_commit(functools.partial(release_upload, job_id=job.pk))
    return job
