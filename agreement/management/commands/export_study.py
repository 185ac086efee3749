"""Write a whole rating study to one archive file (agreement.archive).

manage.py export_study --study 3 --output study-3.zip
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agreement.archive import export_study
from annotation.models import RatingStudy


class Command(BaseCommand):
    help = (
        "Export a rating study (items, rubric, pseudonymous members, ratings, attention checks, "
        "calibration, jury, reports, audit)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", type=int, required=True, help="Rating study id.")
        parser.add_argument("--output", required=True, help="The archive file to write (.zip).")

    def handle(self, *args, **options) -> None:
        study = RatingStudy.objects.filter(pk=options["study"]).first()
        if study is None:
            raise CommandError(f"No rating study with id {options['study']}.")
        output = Path(options["output"])
        if output.exists():
            raise CommandError(f"{output} exists already; choose another file name.")
        output.write_bytes(export_study(study=study, actor=None))
        self.stdout.write(f"Study {study.pk} ({study.name}) written to {output}.")
