"""What a database column accepts of a user's text, checked before anything is written.

SQLite stores any string in any column. PostgreSQL refuses a NUL character (U+0000) in
text, in a jsonb string and even in a query's parameter, and a string longer than its
varchar column's max_length; either is a DataError there, a 500 for what is the user's
mistake, while SQLite takes the same input silently (and keeps an over-long name whole).
A lone surrogate (U+D800-U+DFFF, which JSON's "\\ud800" escape yields) is not text at all
and fails on both databases as the driver encodes it.

Every service that writes user-supplied text checks it here first, so that both databases
give the same clear error naming the field, before any row is written. The limit is the
model field's own max_length (`column_max_length`), never a copy of the number.
Django-free: models are only read through `_meta`, and errors are the app's DomainError.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from medhelm_site.common.errors import DomainError

NUL = "\x00"


def column_max_length(model: Any, column: str) -> int | None:
    """The max_length of a model field (None for a TextField): what its column holds."""
    return model._meta.get_field(column).max_length


def text_problem(value: object, *, max_length: int | None = None) -> str | None:
    """Why a database column cannot store `value` ("contains a NUL character", "is ... long;
    at most N"), or None when it can."""
    if not isinstance(value, str):
        return f"must be text, got {type(value).__name__}"
    if NUL in value:
        return "contains a NUL character (\\x00), which cannot be stored; remove it"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return (
                f"contains {value[exc.start]!r} at position {exc.start}, half of a character "
                "(a lone surrogate), which cannot be stored; remove it"
            )
    if max_length is not None and len(value) > max_length:
        return f"is {len(value)} characters long; at most {max_length} fit"
    return None


def checked_text(
    value: object,
    *,
    field: str,
    error: type[DomainError] = DomainError,
    max_length: int | None = None,
    where: str | None = None,
) -> str:
    """`value` when a column of `max_length` (None: unlimited text) can store it; else
    `error` whose message starts with `where` (default: `field`) and whose field is `field`."""
    problem = text_problem(value, max_length=max_length)
    if problem is not None:
        raise error(f"{where or field}: {problem}", field=field)
    assert isinstance(value, str)
    return value


def checked_column_text(
    value: object,
    *,
    model: Any,
    column: str,
    error: type[DomainError] = DomainError,
    field: str | None = None,
    where: str | None = None,
) -> str:
    """`checked_text` against the max_length of `model`'s field `column`; the error's field
    is `field` (default: the column's name)."""
    return checked_text(
        value,
        field=field or column,
        error=error,
        max_length=column_max_length(model, column),
        where=where,
    )


def json_text_problem(value: Any, *, where: str) -> str | None:
    """Where in a JSON-like value (dicts, lists, strings, numbers) a key or a string cannot be
    stored in a jsonb column, and why ("details.name: contains a NUL character ..."), or
    None. Walks iteratively, so a deeply nested value cannot exhaust the stack."""
    pending: list[tuple[str, Any]] = [(where, value)]
    while pending:
        path, current = pending.pop()
        if isinstance(current, str):
            problem = text_problem(current)
            if problem is not None:
                return f"{path}: {problem}"
        elif isinstance(current, Mapping):
            for key, child in current.items():
                if isinstance(key, str) and (problem := text_problem(key)) is not None:
                    return f"{path}: a key {problem}"
                pending.append((f"{path}.{key}", child))
        elif isinstance(current, list | tuple):
            pending.extend((f"{path}[{pos}]", child) for pos, child in enumerate(current))
    return None


def check_json_text(
    value: Any, *, field: str, error: type[DomainError] = DomainError, where: str | None = None
) -> None:
    """`error` naming `field` when some key or string inside `value` cannot be stored in a
    jsonb column (see `json_text_problem`)."""
    problem = json_text_problem(value, where=where or field)
    if problem is not None:
        raise error(problem, field=field)
