"""Write a Delphi study's report or one of its exports to a file (or stdout).

manage.py delphi_report 3 --format pdf --output report.pdf
manage.py delphi_report 3 --format html --output report.html
manage.py delphi_report 3 --format checklist            (ACCORD / CREDES, Markdown)
manage.py delphi_report 3 --format raw.csv --output raw.csv
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from delphi.errors import DelphiError
from delphi.exports.registry import EXPORT_NAMES, render_export
from delphi.models import DelphiStudy

# Short names for the three a person asks for most; every export name works too.
ALIASES = {"html": "report.html", "pdf": "report.pdf", "checklist": "checklist.md"}


class Command(BaseCommand):
    help = "Write a Delphi study's report (html, pdf), checklist or one export to a file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study_id", type=int, help="Delphi study id.")
        parser.add_argument(
            "--format",
            default="html",
            choices=[*ALIASES, *EXPORT_NAMES],
            help="html, pdf, checklist, or an export name (default: html).",
        )
        parser.add_argument("--output", type=Path, help="File to write (default: stdout).")

    def handle(self, *args: Any, **options: Any) -> None:
        study = DelphiStudy.objects.filter(pk=options["study_id"]).first()
        if study is None:
            raise CommandError(f"no Delphi study {options['study_id']}")
        name = ALIASES.get(options["format"], options["format"])
        output: Path | None = options["output"]
        if name.endswith(".pdf") and output is None:
            raise CommandError("a PDF needs --output FILE")
        try:
            content, _content_type, _filename = render_export(study=study, name=name)
        except DelphiError as exc:
            raise CommandError(str(exc)) from exc
        if output is None:
            self.stdout.write(content.decode("utf-8"), ending="")
            return
        output.write_bytes(content)
        self.stderr.write(f"wrote {output} ({name}, {len(content)} bytes)")
