"""The errors of a long file of ratings or scores, collected in bounded memory.

A file of hundreds of thousands of bad lines must not become as many objects in the web or
worker process: LineErrors keeps the first SHOWN_ERRORS (what a page lists) and the count,
and writes every error, as it comes, to a spool file (one JSON object a line) that the
error download reads back through the site's CSV writer. A job's spool lives under
MEDIA_ROOT/imports/errors/ as long as the job does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from django.conf import settings

from annotation.imports.longfile import LineError

SHOWN_ERRORS = 100
ERROR_COLUMNS = ("line", "column", "reason")
ERROR_DIR = "imports/errors"


def error_spool(job_id: int) -> Path:
    """Where the complete error list of import job `job_id` is kept."""
    return Path(settings.MEDIA_ROOT) / ERROR_DIR / f"job-{job_id}.jsonl"


class LineErrors:
    """The first SHOWN_ERRORS errors, their count, and (given a spool path) every error on
    disk. Errors are added in line order by the readers and checks."""

    def __init__(self, spool: Path | None = None) -> None:
        self.first: list[LineError] = []
        self.count = 0
        self._spool_path = spool
        self._spool: IO[str] | None = None
        if spool is not None:
            spool.parent.mkdir(parents=True, exist_ok=True)
            spool.unlink(missing_ok=True)  # a job run again starts a new list

    def add(self, error: LineError) -> None:
        self.count += 1
        if len(self.first) < SHOWN_ERRORS:
            self.first.append(error)
        if self._spool_path is not None:
            if self._spool is None:
                self._spool = self._spool_path.open("w", encoding="utf-8")
            self._spool.write(json.dumps(error.as_dict()) + "\n")

    def extend(self, errors: Iterable[LineError]) -> None:
        for error in errors:
            self.add(error)

    def __bool__(self) -> bool:
        return self.count > 0

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None


def spooled_rows(spool: Path) -> Iterator[dict[str, Any]]:
    """The errors of a spool file, one dict (line, column, reason) each, read lazily."""
    with spool.open(encoding="utf-8") as lines:
        for line in lines:
            yield json.loads(line)
