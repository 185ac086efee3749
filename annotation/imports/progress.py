"""What an import job stores of its errors and warnings, and what a page polls of it.

Warnings (empty outputs, skipped HELM request states) are kept in job.errors as entries with
"level": "warning", since ImportJob has no field of its own for them; import_progress
separates them. Entries beyond MAX_STORED_ERRORS are counted in one last entry with "more".
An entry with a "step" is the failure of a step after a succeeded import (after_import.py):
the job is failed, but its items were imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from annotation.imports.formats import MISMATCH
from annotation.imports.rows import RowError
from annotation.models import ImportJob

MAX_STORED_ERRORS = 200
FINISHED = (ImportJob.Status.SUCCEEDED, ImportJob.Status.FAILED)


def stored_messages(errors: Sequence[RowError], warnings: Sequence[RowError]) -> list[dict]:
    """Errors, then warnings, as job.errors keeps them."""
    return _capped(errors, kind="errors") + _capped(warnings, kind="warnings", level="warning")


def _capped(entries: Sequence[RowError], *, kind: str, level: str = "") -> list[dict[str, Any]]:
    extra = {"level": level} if level else {}
    stored: list[dict[str, Any]] = [{**e.as_dict(), **extra} for e in entries[:MAX_STORED_ERRORS]]
    if len(entries) > MAX_STORED_ERRORS:
        rest = len(entries) - MAX_STORED_ERRORS
        stored.append({"where": "...", "reason": f"and {rest} more {kind}", "more": rest, **extra})
    return stored


def _listed(entry: dict[str, Any]) -> dict[str, str]:
    return {"where": entry["where"], "reason": entry["reason"]}


def _suite_phase_and_percent(job: ImportJob) -> tuple[str, int]:
    """A suite's progress counts runs: "refuse" checks every run, then saves each (two
    steps a run); "skip" checks and saves each run in turn."""
    total = job.runs_total
    if job.on_bad_run == ImportJob.OnBadRun.REFUSE:
        steps, done = 2 * total, job.runs_checked + job.runs_done
        if job.runs_checked < total:
            phase = f"checking run {job.runs_checked + 1} of {total}"
        else:
            phase = f"saving run {min(job.runs_done + 1, total)} of {total}"
    else:
        steps, done = total, job.runs_done
        phase = f"importing run {min(job.runs_done + 1, total)} of {total}"
    percent = min(99, 100 * done // steps) if steps else 0
    if job.status == ImportJob.Status.FAILED:
        return "failed", percent
    return phase, percent


def _phase_and_percent(job: ImportJob) -> tuple[str, int]:
    total, processed = job.total_rows, job.processed_rows
    if job.status == ImportJob.Status.QUEUED:
        return "queued", 0
    if job.runs_total and job.status != ImportJob.Status.SUCCEEDED:
        return _suite_phase_and_percent(job)
    if job.status == ImportJob.Status.RUNNING:
        # The save after the checks is one transaction that shows no progress of its own:
        # "saving" once every row is checked, and 100 only once it has succeeded.
        phase = "saving" if total and processed >= total else "checking"
        return phase, min(99, 100 * processed // total) if total else 0
    if job.status == ImportJob.Status.FAILED:
        # Not a full bar: how far the checks got before the import failed.
        return "failed", min(99, 100 * processed // total) if total else 0
    return "done", 100


def import_progress(job: ImportJob) -> dict[str, Any]:
    """What a page or API polls: status, phase, counts, percent, the first 50 errors, and
    among them the failed steps after the import (step_errors: its items were imported)."""
    entries = job.errors or []
    errors = [e for e in entries if e.get("level") != "warning"]
    warnings = [e for e in entries if e.get("level") == "warning"]
    phase, percent = _phase_and_percent(job)
    return {
        "id": job.pk,
        "status": job.status,
        "failed": job.status == ImportJob.Status.FAILED,
        "format": job.file_format,
        "format_note": job.format_note,
        "format_mismatch": MISMATCH in job.format_note,
        "phase": phase,
        "processed": job.processed_rows,
        "total": job.total_rows,
        "percent": percent,
        "created": job.created_items,
        "unchanged": job.unchanged_items,
        "errors": [_listed(e) for e in errors if "more" not in e][:50],
        "error_count": sum(e.get("more", 1) for e in errors),
        "step_errors": [_listed(e) for e in errors if "step" in e],
        "warnings": [_listed(w) for w in warnings if "more" not in w][:50],
        "warning_count": sum(w.get("more", 1) for w in warnings),
        "finished": job.status in FINISHED,
        "suite": job.runs_total > 0,
        "on_bad_run": job.on_bad_run,
        "runs_total": job.runs_total,
        "runs_checked": job.runs_checked,
        "runs_done": job.runs_done,
        "runs": list(job.run_summaries or []),
    }
