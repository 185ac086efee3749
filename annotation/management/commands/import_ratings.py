"""manage.py import_ratings --study ID PATH [--as USERNAME]

Imports human ratings from a long file (annotation.services.rating_imports).
"""

from __future__ import annotations

from typing import IO

from django.contrib.auth.models import AbstractBaseUser

from annotation import services
from annotation.management.long_imports import LongImportCommand
from annotation.models import RatingStudy


class Command(LongImportCommand):
    help = (
        "Import ratings collected elsewhere from a long CSV or JSONL file (external_id, "
        "model, rater, criterion, value, comment). All-or-nothing; the same file twice "
        "changes nothing."
    )
    kind = "ratings"

    def run_import(
        self, *, study: RatingStudy, data: IO[bytes], name: str, actor: AbstractBaseUser
    ) -> services.LongImportSummary:
        return services.import_ratings(study=study, data=data, name=name, actor=actor)
