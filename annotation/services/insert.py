"""One multi-row INSERT ... RETURNING id for the submit's ratings and audit rows.

What QuerySet.bulk_create does for these rows (each field's pre_save, so auto_now(_add)
times are set, and its get_db_prep_save, so JSON and datetimes are adapted for the backend),
without compiling the statement through the ORM on every submit: that compile was the
largest CPU cost left in a submit under load (bench/README.md, bench_rating). Like
bulk_create, it sends no signals and skips save().
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model


@lru_cache(maxsize=64)
def _statement(
    model: type[Model], rows: int, conn: BaseDatabaseWrapper
) -> tuple[str, tuple[Field, ...]]:
    fields = tuple(f for f in model._meta.concrete_fields if not f.primary_key)
    qn = conn.ops.quote_name
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    sql = (
        f"INSERT INTO {qn(model._meta.db_table)} ({', '.join(qn(f.column) for f in fields)}) "
        f"VALUES {', '.join([one] * rows)} RETURNING {qn(model._meta.pk.column)}"
    )
    return sql, fields


def insert_rows(objs: Sequence[Model]) -> None:
    """Insert new instances of one model (auto primary key) in one statement; each gets its
    primary key, in the order given (rows come back in VALUES order, as bulk_create relies
    on for PostgreSQL and SQLite)."""
    if not objs:
        return
    model = type(objs[0])
    conn = connections[DEFAULT_DB_ALIAS]
    if not conn.features.can_return_rows_from_bulk_insert:
        model._default_manager.bulk_create(objs)  # a backend without RETURNING
        return
    sql, fields = _statement(model, len(objs), conn)
    params = [f.get_db_prep_save(f.pre_save(obj, True), conn) for obj in objs for f in fields]
    with conn.cursor() as cursor:
        cursor.execute(sql, params)
        ids = [row[0] for row in cursor.fetchall()]
    if len(ids) != len(objs):
        raise RuntimeError(f"inserted {len(objs)} {model.__name__} rows, got {len(ids)} ids back")
    for obj, pk in zip(objs, ids, strict=True):
        obj.pk = pk
