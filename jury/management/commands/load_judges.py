"""manage.py load_judges FILE...: create or update judges from definitions (fixtures/judges)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from jury.errors import JuryError
from jury.judge_definitions import load_judge_files


class Command(BaseCommand):
    help = (
        "Create or update judges from JSON definitions (e.g. fixtures/judges/*.json), checked "
        "as the admin checks a judge; all files or none."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path, help="judge definition files")

    def handle(self, *args: Any, files: list[Path], **options: Any) -> None:
        try:
            loaded = load_judge_files(files)
        except JuryError as exc:
            raise CommandError(exc.message) from None
        for judge, created in loaded:
            verb = "created" if created else "updated"
            self.stdout.write(f"{verb} judge {judge.name!r} ({judge.provider}, {judge.model_id})")
        self.stdout.write(
            "Test each with: manage.py test_judge <name> --save (it checks the model id and "
            "picks the structured-output mode)."
        )
