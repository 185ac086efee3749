"""Row ids a test can recognise: the next rows of a table get ids no page shows by chance.

A test that looks for an item's id in what a browser received cannot tell "3" the id from
"3" the scale point or the third place in a queue. Moving a table's id counter far above
every number a page shows makes a match mean exactly one thing.
"""

from __future__ import annotations

from django.db import connection, models


def start_ids_at(model: type[models.Model], first: int) -> None:
    """The next row of `model` gets id `first` (the table must hold no higher id).

    PostgreSQL: the id column's sequence. SQLite: Django's AUTOINCREMENT counter in
    sqlite_sequence. Both changes are undone with the test's transaction on SQLite; a
    PostgreSQL sequence stays moved, which no test relies on.
    """
    table = model._meta.db_table
    column = model._meta.pk.column
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT setval(pg_get_serial_sequence(%s, %s), %s, false)", [table, column, first]
            )
        elif connection.vendor == "sqlite":
            cursor.execute("DELETE FROM sqlite_sequence WHERE name = %s", [table])
            cursor.execute(
                "INSERT INTO sqlite_sequence (name, seq) VALUES (%s, %s)", [table, first - 1]
            )
        else:
            raise NotImplementedError(f"start_ids_at knows no {connection.vendor} database")
