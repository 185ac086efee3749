"""manage.py import_scores --study ID PATH [--as USERNAME]

Imports judge verdicts and metric scores from a long file (jury.score_imports).
"""

from __future__ import annotations

from typing import IO

from django.contrib.auth.models import AbstractBaseUser

from annotation.management.long_imports import LongImportCommand
from annotation.models import RatingStudy
from annotation.services import LongImportSummary
from jury.score_imports import import_scores


class Command(LongImportCommand):
    help = (
        "Import judge verdicts and metric scores from a long CSV or JSONL file (external_id, "
        "model, kind, scorer, criterion, value, comment). All-or-nothing; the same file twice "
        "changes nothing."
    )
    kind = "scores"

    def run_import(
        self, *, study: RatingStudy, data: IO[bytes], name: str, actor: AbstractBaseUser
    ) -> LongImportSummary:
        return import_scores(study=study, data=data, name=name, actor=actor)
