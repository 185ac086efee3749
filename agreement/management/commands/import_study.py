"""Read a study archive (manage.py export_study) as a new rating study, all or nothing.

manage.py import_study study-3.zip
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agreement.archive import ArchiveError, import_study


class Command(BaseCommand):
    help = "Import a study archive as a new rating study (existing studies are never touched)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("archive", help="The archive file (.zip) written by export_study.")

    def handle(self, *args, **options) -> None:
        path = Path(options["archive"])
        if not path.is_file():
            raise CommandError(f"{path} is not a file.")
        try:
            study = import_study(data=path.read_bytes(), actor=None)
        except ArchiveError as exc:
            raise CommandError(
                f"{path}: {exc.field}: {exc.message}; nothing was imported."
            ) from None
        self.stdout.write(f"Imported as study {study.pk} ({study.name}).")
