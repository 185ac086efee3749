"""manage.py import_helm_verdicts --study ID PATH [--as USERNAME]

Imports the MedHELM jury verdicts of a HELM run (a run directory, a zip of one, or its
scenario_state.json) as judge scores on the study's items (jury.helm_verdicts). Import the
items first (import_items --format helm). Prints what was created and what was skipped; on
an error or a conflict prints every one as "where: reason", saves nothing and exits non-zero.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import RatingStudy
from jury.helm_verdicts import HelmVerdictReport, import_helm_verdicts

SHOWN = 20  # details listed per kind; the rest are counted


class Command(BaseCommand):
    help = (
        "Import the LLM jury verdicts of a HELM run as scores of judges helm:<judge>. "
        "All-or-nothing; importing the same run again changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", type=int, required=True, help="Rating study id.")
        parser.add_argument(
            "--as",
            dest="username",
            help="Who imports (recorded in the audit row); default: the study's creator.",
        )
        parser.add_argument("path", help="A HELM run directory, its zip or scenario_state.json.")

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
        if not path.exists():
            raise CommandError(f"{path} does not exist")
        report = import_helm_verdicts(study=study, source=path, actor=actor)
        self._report(report)

    def _list(self, title: str, entries: list, *, style: Any) -> None:
        for entry in entries[:SHOWN]:
            self.stdout.write(style(f"{title} {entry.where}: {entry.reason}"))
        if len(entries) > SHOWN:
            self.stdout.write(style(f"{title}: and {len(entries) - SHOWN} more"))

    def _report(self, report: HelmVerdictReport) -> None:
        if not report.ok:
            problems = [*report.errors, *report.conflicts]
            for problem in problems:
                self.stderr.write(f"{problem.where}: {problem.reason}")
            raise CommandError(
                f"{len(problems)} problem{'s' if len(problems) != 1 else ''}; nothing was saved"
            )
        warn = self.style.WARNING
        self._list("unmatched", report.unmatched, style=warn)
        self._list("invalid", report.invalid, style=warn)
        for judge, n in report.missing.items():
            self.stdout.write(warn(f"missing: {judge} gave no verdict on {n} judged items"))
        for key, n in report.unknown_criteria.items():
            self.stdout.write(warn(f"not in the rubric: {key!r} ({n} scores not imported)"))
        created = ", ".join(report.judges_created) or "none"
        self.stdout.write(
            self.style.SUCCESS(
                f"HELM verdicts imported: {report.scores_created} scores created, "
                f"{report.unchanged} unchanged, {len(report.invalid)} invalid; judges "
                f"{', '.join(report.judges) or 'none'} (created: {created}); "
                f"{report.not_judged} items the jury did not judge."
            )
        )
