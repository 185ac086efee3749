"""manage.py import_items --study ID --format jsonl|csv|helm PATH [--as USERNAME]

Runs the import synchronously through the same service as the upload page, prints progress
and then the result, or every error as "where: reason" and exits non-zero.
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.errors import AnnotationError
from annotation.imports import FORMATS, import_progress, pack_helm_run, start_import
from annotation.imports.suite import pack_helm_folder
from annotation.models import ImportJob, RatingStudy


class Command(BaseCommand):
    help = (
        "Import items into a rating study from a JSONL or CSV file or a HELM run directory "
        "(or a zip of one). All-or-nothing; importing the same items again changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", type=int, required=True, help="Rating study id.")
        parser.add_argument("--format", dest="file_format", choices=FORMATS, required=True)
        parser.add_argument(
            "--as",
            dest="username",
            help="Who imports (a coordinator of the study, or staff); default: the study's "
            "creator.",
        )
        parser.add_argument(
            "--on-bad-run",
            dest="on_bad_run",
            choices=ImportJob.OnBadRun.values,
            default=ImportJob.OnBadRun.REFUSE,
            help="For a HELM suite: refuse the whole suite when a run is bad (default), or "
            "skip the bad run (named in the summary) and import the others.",
        )
        parser.add_argument(
            "--completions",
            choices=ImportJob.Completions.values,
            default=ImportJob.Completions.FIRST,
            help="For HELM requests with several completions (num_outputs > 1): import the "
            "first (default; the others are counted as dropped) or each as its own item.",
        )
        parser.add_argument(
            "path",
            help="The file; for helm a run directory, a suite folder "
            "(benchmark_output/runs/<suite>/), a zip of either, or scenario_state.json.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        study = RatingStudy.objects.filter(pk=options["study"]).first()
        if study is None:
            raise CommandError(f"no rating study with id {options['study']}")
        if options["username"]:
            actor = get_user_model().objects.filter(username=options["username"]).first()
            if actor is None:
                raise CommandError(f"no user {options['username']!r}")
        else:
            actor = study.created_by
        path = Path(options["path"])
        file_format = options["file_format"]
        if not path.exists():
            raise CommandError(f"{path} does not exist")
        if file_format == "helm" and path.is_dir():
            # A run directory or a suite folder, packed into one zip on disk (run by run,
            # never the whole suite in memory) that keeps the run directories' names.
            content: Any = tempfile.TemporaryFile()  # noqa: SIM115 (closed below)
            try:
                runs = pack_helm_folder(path, content)
            except AnnotationError as exc:
                content.close()
                raise CommandError(str(exc)) from exc
            content.seek(0)
            uploaded_name = f"{path.resolve().name}.zip"
            self.stdout.write(f"{path}: {runs} run director{'ies' if runs != 1 else 'y'}")
        elif file_format == "helm" and path.name == "scenario_state.json":
            # Stored as one zip that keeps the run directory's name (the benchmark fallback).
            content = io.BytesIO(pack_helm_run(path))
            uploaded_name = f"{path.parent.name}.zip"
        elif path.is_dir():
            raise CommandError(f"{path} is a directory; --format {file_format} needs a file")
        else:
            content = path.open("rb")
            uploaded_name = path.name
        self._last_shown = -1
        try:
            job = start_import(
                study=study,
                uploaded_name=uploaded_name,
                content=content,
                file_format=file_format,
                actor=actor,
                background=False,
                on_progress=self._show_progress,
                on_bad_run=options["on_bad_run"],
                helm_completions=options["completions"],
            )
        except (AnnotationError, PermissionDenied) as exc:
            raise CommandError(str(exc)) from exc
        finally:
            content.close()
        self._report(job)

    def _show_progress(self, job: ImportJob) -> None:
        progress = import_progress(job)
        if job.runs_total:
            self._show_run_progress(job, progress)
            return
        if progress["processed"] == self._last_shown and not progress["finished"]:
            return
        self._last_shown = progress["processed"]
        self.stdout.write(
            f"{progress['phase']}: {progress['processed']}/{progress['total']} rows "
            f"({progress['percent']}%)"
        )

    def _show_run_progress(self, job: ImportJob, progress: dict[str, Any]) -> None:
        """One line per run checked or finished: "run k/N <run>: <status> ..."."""
        shown = job.runs_checked + job.runs_done
        if shown == self._last_shown or not job.run_summaries:
            return
        self._last_shown = shown
        summary = job.run_summaries[-1] if job.runs_done == 0 else None
        if summary is None:
            index = min(job.runs_done, len(job.run_summaries)) - 1
            summary = job.run_summaries[max(index, 0)]
        self.stdout.write(
            f"{progress['phase']} ({progress['percent']}%): run {summary['run']}: "
            f"{summary['status']}, {summary['request_states']} request states"
        )

    def _report_runs(self, job: ImportJob) -> None:
        for s in job.run_summaries:
            counts = ", ".join(f"{k} {v}" for k, v in sorted(s["counts"].items()) if v)
            line = (
                f"run {s['run']}: {s['status']}; {s['request_states']} request states, "
                f"{s['items']} items ({s['created']} created, {s['unchanged']} unchanged)"
                + (f"; {counts}" if counts else "")
                + (f"; {s['problem']}" if s["problem"] else "")
            )
            style = self.style.WARNING if s["status"] in ("skipped", "refused", "failed") else str
            self.stdout.write(style(line))

    def _report(self, job: ImportJob) -> None:
        self._report_runs(job)
        for warning in job.errors:
            if warning.get("level") == "warning":
                self.stdout.write(
                    self.style.WARNING(f"warning {warning['where']}: {warning['reason']}")
                )
        if job.status == ImportJob.Status.SUCCEEDED:
            self.stdout.write(
                self.style.SUCCESS(
                    f"Import {job.pk} succeeded: {job.created_items} items created, "
                    f"{job.unchanged_items} unchanged."
                )
            )
            return
        errors = [e for e in job.errors if e.get("level") != "warning"]
        for error in errors:
            self.stderr.write(f"{error['where']}: {error['reason']}")
        count = import_progress(job)["error_count"]
        saved = (
            f"the {job.runs_done} runs saved before the failure stay imported"
            if job.runs_total and job.runs_done
            else "nothing was saved"
        )
        raise CommandError(
            f"import {job.pk} failed with {count} error{'s' if count != 1 else ''}; {saved}"
        )
