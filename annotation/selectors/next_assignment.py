"""Where a rater goes next: the one definition of the order in which a rater takes their open
assignments (not started, or a draft saved), as the SQL the rating hot path embeds.

Starting (the resume redirect; after a calibration item, the next calibration item):
  1. calibration items first: ordinary work waits until they are rated
     (annotation.services.calibration; rater_assignment's `calibration_open`);
  2. then a started draft before an unstarted item;
  3. then the rater's own order (position).
Moving on after an ordinary submit (queue_position's `next_unfinished`): the next open one
after this one in the rater's own order, else the first open one before it.

The rater's own order needs no tie-break: a position is unique per rater in a study
(Assignment's constraint assignment_position_once_per_clinician), and ordering by it alone
keeps the moving-on lookups on the index on (study, clinician, position).

Plain SQL, as the rest of the hot path (hot_path.py and queue.py say why): each function
returns a fragment over the assignment table under the alias `q`, with the study and the
clinician given as SQL (a column of the caller's statement or a placeholder in the caller's
parameter style), for the caller to embed in its one statement. The statuses are written in
as literals, so the fragments add no parameter of their own.
"""

from __future__ import annotations

from django.db import connection

from annotation.models import Assignment, CalibrationItem

_OPEN = (Assignment.Status.PENDING, Assignment.Status.IN_PROGRESS)
# The rater's own order (3 above): unique per rater in a study, so it needs no tie-break.
_OWN_ORDER = "q.position"


def _text(value: str) -> str:
    """A status as an SQL literal (our own choices' values: lower-case words, nothing to
    escape; anything else is refused rather than quoted)."""
    if not value.replace("_", "").isalnum():
        raise ValueError(f"not a plain status value: {value!r}")
    return f"'{value}'"


def _table(model: type) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _is_open(q: str) -> str:
    return f"{q}.status IN ({', '.join(_text(s) for s in _OPEN)})"


def is_calibration_sql(q: str) -> str:
    """An expression: whether the assignment under alias `q` is of a calibration item."""
    return f"EXISTS (SELECT 1 FROM {_table(CalibrationItem)} k WHERE k.item_id = {q}.item_id)"


def _open_of(study: str, clinician: str) -> str:
    """The rater's open assignments in the study."""
    return f"q.study_id = {study} AND q.clinician_id = {clinician} AND {_is_open('q')}"


def _start_order() -> str:
    """The starting order (1-3 above), first term first, each ascending."""
    return ", ".join(
        (
            f"CASE WHEN {is_calibration_sql('q')} THEN 0 ELSE 1 END",
            f"CASE WHEN q.status = {_text(Assignment.Status.IN_PROGRESS)} THEN 0 ELSE 1 END",
            _OWN_ORDER,
        )
    )


def first_open_sql(*, study: str, clinician: str, calibration_only: bool = False) -> str:
    """A query for the handle of the open assignment the rater starts at (None when they
    have none open), in the starting order; `calibration_only`: among calibration items."""
    where = _open_of(study, clinician)
    if calibration_only:
        where += f" AND {is_calibration_sql('q')}"
    return (
        f"SELECT q.handle FROM {_table(Assignment)} q WHERE {where} "
        f"ORDER BY {_start_order()} LIMIT 1"
    )


def calibration_open_sql(*, study: str, clinician: str) -> str:
    """An expression: whether the rater has calibration items still open in the study (the
    gate of rule 1: their ordinary work waits meanwhile)."""
    return (
        f"EXISTS (SELECT 1 FROM {_table(Assignment)} q JOIN {_table(CalibrationItem)} k "
        f"ON k.item_id = q.item_id WHERE {_open_of(study, clinician)})"
    )


def moving_on_sql(*, study: str, clinician: str, position: str, current: str) -> str:
    """An expression: the handle of the open assignment the rater moves on to from the one
    at `position` whose id is `current` (excluded: it may be a draft still), else NULL."""
    mine = f"{_open_of(study, clinician)} AND q.id <> {current}"
    a = _table(Assignment)
    after = f"SELECT q.handle FROM {a} q WHERE {mine} AND q.position > {position}"
    first = f"SELECT q.handle FROM {a} q WHERE {mine}"
    take = f"ORDER BY {_OWN_ORDER} LIMIT 1"
    return f"COALESCE(({after} {take}), ({first} {take}))"


def first_open_handle(
    *, study_id: int, clinician_id: int, calibration_only: bool = False
) -> str | None:
    """The handle of the open assignment the rater starts at (first_open_sql), in one query."""
    sql = first_open_sql(study="%s", clinician="%s", calibration_only=calibration_only)
    with connection.cursor() as cursor:
        cursor.execute(sql, [study_id, clinician_id])
        row = cursor.fetchone()
    return row[0] if row is not None else None
