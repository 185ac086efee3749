"""Statements for the writes that run for every batch of answers (storage.py, history.py),
written out rather than built by the ORM: building them (queryset, compiler, model instances)
cost several times the database's own work. Names come from the models' metadata.

On PostgreSQL a batch is one statement whatever its size, its rows sent as arrays with
server-side binding: one text that PostgreSQL plans once per connection, and no per-row round
of Python adaptation or statement execution (both cost less CPU, here and in PostgreSQL, than
Django's client-side binding or a pipelined executemany: bench/bench_jury.py). SQLite,
in-process, takes them as an executemany.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connection, models
from django.db.models import Field


@contextmanager
def cursor() -> Iterator[Any]:
    """Django's cursor; on PostgreSQL one that binds parameters on the server (psycopg's own
    cursor; Django uses psycopg's ClientCursor, which writes every value into the statement
    text in Python and makes each statement a new one for PostgreSQL to parse and plan),
    inside Django's wrapper (execute wrappers, error translation, query logging)."""
    if connection.vendor != "postgresql":
        with connection.cursor() as plain:
            yield plain
        return
    import psycopg

    connection.ensure_connection()
    raw = psycopg.Cursor(connection.connection)
    wrapped = (
        connection.make_debug_cursor(raw)
        if connection.queries_logged
        else connection.make_cursor(raw)
    )
    with wrapped as server_bound:
        yield server_bound


def unnest(fields: Sequence[Field], rows: Sequence[Sequence[Any]]) -> tuple[str, list[list]]:
    """`unnest(%s::type[], ...)` over the rows' columns (in `fields` order), and its
    parameters: one array per column. PostgreSQL only."""
    sql = "unnest(" + ", ".join(f"%s::{f.db_type(connection)}[]" for f in fields) + ")"
    return sql, [list(column) for column in zip(*rows, strict=True)]


def insert_rows(model: type[models.Model], columns: Sequence[str], rows: Sequence[tuple]) -> None:
    """Insert rows of `model` (values in `columns` order, already in the database's form)."""
    if not rows:
        return
    meta = model._meta
    qn = connection.ops.quote_name
    fields = [meta.get_field(name) for name in columns]
    insert = f"INSERT INTO {qn(meta.db_table)} ({', '.join(qn(f.column) for f in fields)})"
    if connection.vendor == "postgresql":
        source, arrays = unnest(fields, rows)
        with cursor() as c:
            c.execute(f"{insert} SELECT * FROM {source}", arrays)
        return
    with cursor() as c:
        c.executemany(f"{insert} VALUES ({', '.join(['%s'] * len(fields))})", rows)


def update_column(
    model: type[models.Model], column: str, values: Sequence[tuple[int, Any]]
) -> None:
    """Set one column of the rows with these primary keys: (pk, value) pairs."""
    if not values:
        return
    meta = model._meta
    qn = connection.ops.quote_name
    field, pk = meta.get_field(column), meta.pk
    table, name, pk_name = qn(meta.db_table), qn(field.column), qn(pk.column)
    if connection.vendor == "postgresql":
        source, arrays = unnest([pk, field], values)
        sql = (
            f"UPDATE {table} SET {name} = v.{name} FROM {source} AS v({pk_name}, {name}) "
            f"WHERE {table}.{pk_name} = v.{pk_name}"
        )
        with cursor() as c:
            c.execute(sql, arrays)
        return
    with cursor() as c:
        c.executemany(
            f"UPDATE {table} SET {name} = %s WHERE {pk_name} = %s",
            [(value, key) for key, value in values],
        )
