"""The rating hot path's reads in plain SQL: a clinician's assignment with its study and item
(and the access check), the same row locked for a submit, the rubric with the stored
answers, and the resume point with the user's roles.

These run on every resume redirect, rating page and submit (bench/bench_rating.py loads them
with 50 clinicians). Compiling them through the ORM cost 1-2 ms of CPU each, several times
what the database spends on them; the statements here are built once per process from the
models' own columns, and their rows become model instances through each field's database
converters (as the ORM's compiler does), so they load exactly what a queryset would.
Nothing here is shown to a rater that the ORM selectors would not show (see queue.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model

from annotation.models import (
    Assignment,
    Item,
    Rating,
    RatingStudy,
    RubricCriterion,
    StudyMembership,
)
from annotation.selectors.next_assignment import (
    calibration_open_sql,
    first_open_sql,
    is_calibration_sql,
)
from delphi.models import TaxonomyNode

_Converter = Callable[[Any, Any, Any], Any]


@dataclass(frozen=True)
class _Columns:
    """A model's concrete columns under a table alias, and how to load them."""

    model: type[Model]
    alias: str
    attnames: tuple[str, ...]
    converters: tuple[tuple[int, tuple[_Converter, ...], Any], ...]
    sql: str

    def load(self, row: Sequence[Any], start: int) -> Model:
        values = list(row[start : start + len(self.attnames)])
        for pos, funcs, col in self.converters:
            for func in funcs:
                values[pos] = func(values[pos], col, connection)
        return self.model.from_db(connection.alias, self.attnames, values)


@lru_cache(maxsize=256)
def _columns(model: type[Model], alias: str, conn: BaseDatabaseWrapper) -> _Columns:
    """Per connection (each thread has its own), as the backend's converters are its own."""
    fields = model._meta.concrete_fields
    converters = []
    for pos, field in enumerate(fields):
        col = field.get_col(alias)
        funcs = tuple(conn.ops.get_db_converters(col)) + tuple(col.get_db_converters(conn))
        if funcs:
            converters.append((pos, funcs, col))
    qn = conn.ops.quote_name
    return _Columns(
        model,
        alias,
        tuple(f.attname for f in fields),
        tuple(converters),
        ", ".join(f"{alias}.{qn(f.column)}" for f in fields),
    )


def _cols(model: type[Model], alias: str) -> _Columns:
    return _columns(model, alias, connections[DEFAULT_DB_ALIAS])


def _table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _assignment_sql(where: str, extra: str = "", suffix: str = "") -> tuple[str, list[_Columns]]:
    parts = [
        _cols(Assignment, "a"),
        _cols(RatingStudy, "s"),
        _cols(Item, "i"),
        _cols(TaxonomyNode, "t"),
    ]
    sql = (
        f"SELECT {', '.join(p.sql for p in parts)}{extra} "
        f"FROM {_table(Assignment)} a "
        f"JOIN {_table(RatingStudy)} s ON s.id = a.study_id "
        f"JOIN {_table(Item)} i ON i.id = a.item_id "
        f"LEFT JOIN {_table(TaxonomyNode)} t ON t.id = i.taxonomy_node_id "
        f"WHERE {where}{suffix}"
    )
    return sql, parts


def _load_assignment(row: Sequence[Any], parts: list[_Columns]) -> tuple[Assignment, int]:
    """The assignment with its study, item and item's taxonomy node set; and where the
    row's extra columns start."""
    pos = 0
    loaded = []
    for p in parts:
        loaded.append(p.load(row, pos))
        pos += len(p.attnames)
    assignment, study, item, node = loaded
    item.taxonomy_node = node if item.taxonomy_node_id is not None else None
    assignment.study = study
    assignment.item = item
    return assignment, pos


def rater_assignment(
    *, user: AbstractBaseUser, handle: str, study_id: int | None = None
) -> Assignment | None:
    """The user's own (not withdrawn) assignment with this handle (in this study, if given),
    with its study and item, carrying `rates_in_study`: whether the user is an active
    clinician of its study; `is_calibration`: whether its item is a calibration item; and
    `calibration_open`: whether the user has calibration items still to rate in the study
    (their ordinary work waits until they are done). One query
    (annotation.access.rater_assignment checks access)."""
    where = "a.handle = %s AND a.clinician_id = %s AND a.status <> %s"
    params: list[Any] = [handle, user.pk, Assignment.Status.WITHDRAWN]
    if study_id is not None:
        where += " AND a.study_id = %s"
        params.append(study_id)
    extra = (
        f", EXISTS (SELECT 1 FROM {_table(StudyMembership)} m WHERE m.study_id = a.study_id "
        "AND m.user_id = %s AND m.role = %s AND m.is_active)"
        f", {is_calibration_sql('a')}"
        f", {calibration_open_sql(study='a.study_id', clinician='a.clinician_id')}"
    )
    sql, parts = _assignment_sql(where, extra=extra)
    with connection.cursor() as cursor:
        cursor.execute(sql, [user.pk, StudyMembership.Role.CLINICIAN, *params])
        row = cursor.fetchone()
    if row is None:
        return None
    assignment, extra_at = _load_assignment(row, parts)
    assignment.rates_in_study = bool(row[extra_at])
    assignment.is_calibration = bool(row[extra_at + 1])
    assignment.calibration_open = bool(row[extra_at + 2])
    return assignment


def locked_assignment(*, assignment_id: int) -> tuple[Assignment, bool] | None:
    """For a write: the assignment's row locked (only it, so that submits of other
    assignments do not queue behind one study row) with its study and item, and whether the
    study is locked, read under a share lock (PostgreSQL: FOR SHARE in a scalar subquery,
    taken before the assignment's row lock, the order every study-wide writer takes; many
    submits hold it at once and set_study_lock's FOR UPDATE waits for them). SQLite
    serialises writing transactions (IMMEDIATE), so its plain read is current."""
    if connection.vendor == "postgresql":
        extra = (
            f", (SELECT x.locked_at FROM {_table(RatingStudy)} x WHERE x.id = a.study_id FOR SHARE)"
        )
        suffix = " FOR UPDATE OF a"
    else:
        extra, suffix = ", s.locked_at", ""
    sql, parts = _assignment_sql("a.id = %s", extra=extra, suffix=suffix)
    with connection.cursor() as cursor:
        cursor.execute(sql, [assignment_id])
        row = cursor.fetchone()
    if row is None:
        return None
    assignment, extra_at = _load_assignment(row, parts)
    return assignment, row[extra_at] is not None


@dataclass(frozen=True)
class StoredAnswer:
    """One stored rating of an assignment, as rubric_answers reads it."""

    rating_id: int
    value: int | None
    cannot_assess: bool
    comment: str
    first_submitted: bool  # the rating was submitted once (its first_* values are set)

    def state(self) -> dict[str, object]:
        return {"value": self.value, "cannot_assess": self.cannot_assess, "comment": self.comment}


def rubric_answers(*, assignment: Assignment) -> list[tuple[RubricCriterion, StoredAnswer | None]]:
    """The study's criteria in rubric order, each with this assignment's stored answer to it
    (None where there is none), in one query."""
    crit = _cols(RubricCriterion, "c")
    sql = (
        f"SELECT {crit.sql}, r.id, r.value, r.cannot_assess, r.comment, "
        "r.first_submitted_at IS NOT NULL "
        f"FROM {_table(RubricCriterion)} c LEFT JOIN {_table(Rating)} r "
        "ON r.criterion_id = c.id AND r.assignment_id = %s "
        "WHERE c.study_id = %s ORDER BY c.position, c.id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [assignment.pk, assignment.study_id])
        rows = cursor.fetchall()
    n = len(crit.attnames)
    out = []
    for row in rows:
        criterion = crit.load(row, 0)
        rating_id, value, cannot_assess, comment, first = row[n : n + 5]
        stored = (
            None
            if rating_id is None
            else StoredAnswer(
                rating_id=rating_id,
                value=value,
                cannot_assess=bool(cannot_assess),
                comment=comment,
                first_submitted=bool(first),
            )
        )
        out.append((criterion, stored))
    return out


def resume_target(*, user: AbstractBaseUser, study_id: int) -> tuple[set[str], str | None]:
    """The user's active roles in the study and, in the same query, the handle of the
    assignment a clinician starts at (next_assignment.first_open_sql: calibration items
    first, then a started draft, then their own order)."""
    first_open = first_open_sql(study="m.study_id", clinician="m.user_id")
    sql = (
        f"SELECT m.role, ({first_open}) FROM {_table(StudyMembership)} m "
        "WHERE m.study_id = %s AND m.user_id = %s AND m.is_active"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [study_id, user.pk])
        rows = cursor.fetchall()
    roles = {role for role, _ in rows}
    handle = next((h for role, h in rows if role == StudyMembership.Role.CLINICIAN), None)
    return roles, handle
