"""An import job of a HELM suite: every run of a suite zip (imports.suite), one at a time.

Each run is all-or-nothing, checked as a single-run import is (validation.validate_rows)
and, across the suite, for an (external id, model) that another run holds too. Before any
run is checked, the suite is unpacked once to count its bytes against
MEDHELM_IMPORT_MAX_UNPACKED_BYTES (above it the job fails and nothing is saved), and read
once for the contexts each model was shown (helm_context.ContextSurvey: a context that
differs between the models of an instance is kept for none of them). What happens
to a bad run is the coordinator's choice (ImportJob.on_bad_run):
- "refuse": every run is checked first and nothing is saved when one is bad; then each run
  is read again and saved in its own transaction (one run in memory at a time). A conflict
  that appears between the check and the save (someone else imported the same items
  meanwhile) fails the job, naming the run; the runs saved before it stay imported and
  are named.
- "skip": each run is checked and saved in turn; a bad run is skipped and named, with its
  errors, in the job's warnings and its summary.
Every run gets a summary in job.run_summaries (status, counts, the first problem). A
re-import of the same suite finds every item unchanged.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.errors import AnnotationError
from annotation.imports.after_import import run_after_import_steps
from annotation.imports.helm import helm_benchmark_name, helm_rows
from annotation.imports.helm_context import ContextSurvey
from annotation.imports.job_state import Key, fingerprints, item_keys, late_conflicts
from annotation.imports.placement import place_by_benchmark
from annotation.imports.progress import stored_messages
from annotation.imports.rows import ParsedImport, RowError
from annotation.imports.suite import SuiteZip, open_suite
from annotation.imports.uploads import release_upload
from annotation.imports.validation import validate_rows
from annotation.locking import lock_refusal
from annotation.models import ImportJob, RatingStudy
from annotation.selectors.taxonomy import task_names_for
from annotation.services import ItemRow, create_items

ProgressCallback = Callable[[ImportJob], None]
_SHOWN_PROBLEMS = 3


def stored_suite(job: ImportJob) -> SuiteZip | None:
    """The suite in the job's stored upload, or None when it is not a zip of several HELM
    runs (then the single-run import reads it)."""
    if job.file_format != "helm" or not job.source_path.endswith(".zip"):
        return None
    path = Path(settings.MEDIA_ROOT) / job.source_path
    if not path.is_file():
        return None
    return open_suite(path, label=job.source_name)


@dataclass
class _Run:
    """One run as checked: its rows ready to save, or its errors."""

    folder: str
    label: str
    parsed: ParsedImport
    rows: list[ItemRow]
    errors: list[RowError]


def run_suite_job(
    job: ImportJob, suite: SuiteZip, on_progress: ProgressCallback | None, *, inline: bool
) -> ImportJob:
    """Import every run of `suite` for `job` (claimed, running); see the module docstring."""
    study = job.study
    job.runs_total = len(suite.runs)
    job.save(update_fields=["runs_total"])
    runner = _SuiteRunner(job, suite, on_progress, study=study)
    try:
        suite.check_unpacked_total()  # before any run is read: nothing is saved above it
    except AnnotationError as exc:
        return runner.fail_whole(exc)
    runner.survey_contexts()
    if job.on_bad_run == ImportJob.OnBadRun.REFUSE:
        return runner.refuse_if_bad(inline=inline)
    return runner.skip_bad(inline=inline)


class _SuiteRunner:
    def __init__(
        self,
        job: ImportJob,
        suite: SuiteZip,
        on_progress: ProgressCallback | None,
        *,
        study: RatingStudy,
    ) -> None:
        self.job = job
        self.suite = suite
        self.on_progress = on_progress
        self.study = study
        self.task_names = task_names_for(study=study)
        self.known: set[Key] = item_keys(study)
        self.errors: list[RowError] = []
        self.warnings: list[RowError] = []
        self.summaries: list[dict] = []
        self.contexts = ContextSurvey()

    # --- the two policies ------------------------------------------------------------------

    def refuse_if_bad(self, *, inline: bool) -> ImportJob:
        seen: dict[Key, str] = {}
        for folder in self.suite.runs:
            run = self._check(folder, seen)
            self.summaries.append(_summary(run, "checked" if not run.errors else "refused"))
            self._note(run)
            self._advance(checked=1)
        if self.errors:
            bad = [s["run"] for s in self.summaries if s["status"] == "refused"]
            head = RowError(
                "suite",
                f"{len(bad)} of {len(self.suite.runs)} runs are bad ({', '.join(bad[:10])}"
                f"{', ...' if len(bad) > 10 else ''}); nothing was imported (the whole suite "
                'is refused: choose "skip" to import the other runs)',
                -1,
            )
            return self._fail([head, *self.errors])
        seen = {}
        for index, folder in enumerate(self.suite.runs):
            run = self._check(folder, seen)  # read again: one run in memory at a time
            problems = run.errors or self._save(run)
            if problems:
                saved = [s["run"] for s in self.summaries[:index]]
                self.summaries[index] = _summary(run, "failed", problems)
                why = RowError(
                    "suite",
                    f"run {run.label} conflicts with items imported meanwhile; the runs "
                    f"saved before it stay imported ({', '.join(saved) or 'none'})",
                    -1,
                )
                return self._fail([why, *_named(run.label, problems)], saved=index)
            self.summaries[index] = self._saved_summary(run)
            self._advance()
        return self._succeed(inline=inline)

    def skip_bad(self, *, inline: bool) -> ImportJob:
        seen: dict[Key, str] = {}
        for folder in self.suite.runs:
            run = self._check(folder, seen)
            self.job.total_rows += run.parsed.total
            self.job.processed_rows += run.parsed.total
            self._advance(checked=1)
            problems = run.errors or self._save(run)
            self.warnings.extend(_named(run.label, run.parsed.warnings))
            if problems:
                self.summaries.append(_summary(run, "skipped", problems))
                self.warnings.append(RowError(run.label, _skip_reason(problems), -1))
            else:
                self.summaries.append(self._saved_summary(run))
            self._advance()
        if not any(s["status"] == "imported" for s in self.summaries):
            why = RowError("suite", "every run of the suite is bad: nothing was imported", -1)
            return self._fail([why])
        return self._succeed(inline=inline)

    def survey_contexts(self) -> None:
        """Read every run once for the contexts its models were shown, before any run is
        checked or saved: a context that differs between the models of an instance, within
        a run or across the suite's runs, is then withheld from every model's item."""
        for folder in self.suite.runs:
            parsed = helm_rows(self.suite.read_run(folder), completions=self.job.helm_completions)
            if not parsed.errors:  # a run that cannot be imported shows raters nothing
                self.contexts.record(parsed.rows)

    def fail_whole(self, problem: AnnotationError) -> ImportJob:
        """Fail the job before any run was read, for a problem of the whole upload."""
        why = f"{problem.message}; nothing was imported"
        return self._fail([RowError(problem.field or "file", why, -1)])

    # --- one run -----------------------------------------------------------------------------

    def _check(self, folder: str, seen: dict[Key, str]) -> _Run:
        helm_run = self.suite.read_run(folder)
        parsed = helm_rows(helm_run, completions=self.job.helm_completions)
        self.contexts.withhold(parsed)
        place_by_benchmark(parsed, self.task_names)
        label = helm_run.label or folder
        existing = fingerprints(
            study=self.study, keys={row.key for row in parsed.rows} & self.known
        )
        rows, errors = validate_rows(parsed=parsed, task_names=self.task_names, existing=existing)
        for row in parsed.rows:
            other = seen.get(row.key)
            if other is not None and other != label:
                reason = (
                    f"external_id {row.external_id!r} with model {row.model_name!r} is also "
                    f"in run {other} of this suite"
                )
                errors.append(RowError(row.where, reason, row.order))
            seen.setdefault(row.key, label)
        if errors:
            rows = []
        return _Run(folder, label, parsed, rows, errors)

    def _save(self, run: _Run) -> list[RowError]:
        """Save one run's rows in one transaction; the problems that stopped it, if any."""
        with transaction.atomic():
            study = RatingStudy.objects.select_for_update().get(pk=self.study.pk)
            if (refusal := lock_refusal(study=study, what="items")) is not None:
                return [RowError("study", refusal)]
            late = late_conflicts(study, run.parsed, known=self.known)
            if late:
                return late
            result = create_items(study=study, rows=run.rows, actor=self.job.created_by)
        self.known.update(row.key for row in run.parsed.rows)
        self.job.created_items += result.created
        self.job.unchanged_items += result.unchanged
        run.parsed.counts["created"] = result.created
        run.parsed.counts["unchanged"] = result.unchanged
        return []

    def _saved_summary(self, run: _Run) -> dict:
        summary = _summary(run, "imported")
        summary["created"] = run.parsed.counts.get("created", 0)
        summary["unchanged"] = run.parsed.counts.get("unchanged", 0)
        return summary

    def _note(self, run: _Run) -> None:
        self.errors.extend(_named(run.label, run.errors))
        self.warnings.extend(_named(run.label, run.parsed.warnings))
        self.job.total_rows += run.parsed.total
        self.job.processed_rows += run.parsed.total

    # --- the job -----------------------------------------------------------------------------

    def _advance(self, *, checked: int = 0) -> None:
        """Record one more run checked (checked=1) or finished, for the page to poll."""
        job = self.job
        job.runs_checked += checked
        if not checked:
            job.runs_done += 1
        job.run_summaries = self.summaries
        ImportJob.objects.filter(pk=job.pk).update(
            runs_checked=job.runs_checked,
            runs_done=job.runs_done,
            total_rows=job.total_rows,
            processed_rows=job.processed_rows,
            run_summaries=self.summaries,
        )
        if self.on_progress is not None:
            self.on_progress(job)

    def _fail(self, errors: list[RowError], *, saved: int = 0) -> ImportJob:
        job = self.job
        job.status = ImportJob.Status.FAILED
        job.errors = stored_messages(errors, self.warnings)
        job.run_summaries = self.summaries
        job.runs_done = saved
        if not saved:
            job.created_items = job.unchanged_items = 0
        job.finished_at = timezone.now()
        job.save()
        transaction.on_commit(functools.partial(release_upload, job_id=job.pk))
        return job

    def _succeed(self, *, inline: bool) -> ImportJob:
        job = self.job
        with transaction.atomic():
            current = ImportJob.objects.select_for_update().get(pk=job.pk)
            if current.status != ImportJob.Status.RUNNING:
                return current  # another worker finished this job meanwhile
            job.status = ImportJob.Status.SUCCEEDED
            job.total_rows = sum(s["request_states"] for s in self.summaries)
            job.processed_rows = job.total_rows
            job.runs_done = job.runs_total
            job.run_summaries = self.summaries
            job.errors = stored_messages([], self.warnings)
            job.finished_at = timezone.now()
            job.save()
            transaction.on_commit(
                functools.partial(run_after_import_steps, job_id=job.pk, inline=inline)
            )
        if self.on_progress is not None:
            self.on_progress(job)
        return job


def _named(label: str, entries: list[RowError]) -> list[RowError]:
    """Entries of one run, their place prefixed with the run's name."""
    return [RowError(f"{label}: {e.where}", e.reason, e.order) for e in entries]


def _skip_reason(problems: list[RowError]) -> str:
    shown = "; ".join(f"{p.where}: {p.reason}" for p in problems[:_SHOWN_PROBLEMS])
    more = f"; and {len(problems) - _SHOWN_PROBLEMS} more" if len(problems) > 3 else ""
    return f"run skipped, nothing of it imported ({len(problems)} problems: {shown}{more})"


def _summary(run: _Run, status: str, problems: list[RowError] | None = None) -> dict:
    """What the import page and command show of one run."""
    problems = run.errors if problems is None else problems
    parsed = run.parsed
    models = sorted({row.model_name for row in parsed.rows})
    first = f"{problems[0].where}: {problems[0].reason}" if problems else ""
    return {
        "run": run.label,
        "folder": run.folder,
        "benchmark": helm_benchmark_name(run_spec=None, run_name=run.label),
        "models": models,
        "status": status,
        "request_states": parsed.total,
        "items": len(parsed.rows) if not problems else 0,
        "created": 0,
        "unchanged": 0,
        "errors": len(problems),
        "warnings": len(parsed.warnings),
        "problem": first[:500],
        "counts": {k: v for k, v in parsed.counts.items() if k not in ("created", "unchanged")},
    }
