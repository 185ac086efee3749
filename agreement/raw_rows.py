"""Rows of a query as the database driver gives them, for the reads that fetch tens of
thousands of rows into arrays (agreement.selectors.score_data): Django's converter per value
was a third of the reading at the MedHELM size (bench/README.md, issue 32)."""

from __future__ import annotations

import json
from typing import Any

from django.db import connections
from django.db.models import QuerySet


def raw_rows(queryset: QuerySet) -> list[tuple]:
    """A values_list queryset's rows as the database driver gives them, without Django's
    converter per value (a third of the reading at the MedHELM size): booleans may be 0/1,
    decimals floats, and JSON columns stay text on SQLite and PostgreSQL alike (Django reads
    jsonb as text too); :class:`JsonTexts` decodes each distinct text once."""
    sql, params = queryset.query.get_compiler(queryset.db).as_sql()
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


class JsonTexts(dict):
    """JSON text -> its value, decoded on first use (a study's flags and judge parameters
    take a few distinct values over tens of thousands of rows)."""

    def __missing__(self, text: str) -> Any:
        value = self[text] = json.loads(text)
        return value

    def value(self, text: str | None) -> Any:
        return None if text is None else self[text]
