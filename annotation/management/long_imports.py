"""The shared body of `manage.py import_ratings` and `manage.py import_scores`: the same
service as the upload page, the summary printed, or the first bad lines (at most
longerrors.SHOWN_ERRORS) as "line N, column C: reason", their count and a non-zero exit."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import IO, Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.errors import LongFileRefused
from annotation.models import RatingStudy, StudyMembership
from annotation.services import LongImportSummary
from medhelm_site.common.errors import DomainError


class LongImportCommand(BaseCommand, ABC):
    kind = "ratings"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", type=int, required=True, help="Rating study id.")
        parser.add_argument(
            "--as",
            dest="username",
            help="Who imports (a coordinator of the study, or staff); default: the study's "
            "creator. The audit log names them.",
        )
        parser.add_argument("path", help="The long file: .csv or .jsonl (else read from content).")

    @abstractmethod
    def run_import(
        self, *, study: RatingStudy, data: IO[bytes], name: str, actor: AbstractBaseUser
    ) -> LongImportSummary:
        """Import the file: each command names its service (ratings or scores)."""

    def handle(self, *args: Any, **options: Any) -> None:
        study = RatingStudy.objects.filter(pk=options["study"]).first()
        if study is None:
            raise CommandError(f"no rating study with id {options['study']}")
        actor = self._actor(study, options["username"])
        path = Path(options["path"])
        if not path.is_file():
            raise CommandError(f"{path} is not a file")
        try:
            with path.open("rb") as data:  # read line by line, never whole
                summary = self.run_import(study=study, data=data, name=path.name, actor=actor)
        except LongFileRefused as exc:
            for error in exc.errors:
                self.stderr.write(str(error))
            listed = f" (the first {len(exc.errors)} listed)" if exc.count > len(exc.errors) else ""
            raise CommandError(
                f"nothing was imported: {exc.count} problem(s) in {path.name}{listed}"
            ) from exc
        except DomainError as exc:  # a locked study (annotation's or the jury's type)
            raise CommandError(exc.message) from exc
        self.stdout.write(
            f"{summary.lines} lines ({summary.file_format}): {summary.created} {self.kind} "
            f"created, {summary.unchanged} unchanged"
            + (f"; new: {', '.join(summary.new_names)}" if summary.new_names else "")
        )

    def _actor(self, study: RatingStudy, username: str | None) -> AbstractBaseUser:
        if not username:
            return study.created_by
        actor = get_user_model().objects.filter(username=username).first()
        if actor is None:
            raise CommandError(f"no user {username!r}")
        coordinator = StudyMembership.objects.filter(
            study=study, user=actor, role=StudyMembership.Role.COORDINATOR, is_active=True
        ).exists()
        if not (coordinator or actor.is_staff):
            raise CommandError(f"{username} is neither a coordinator of the study nor staff")
        return actor
