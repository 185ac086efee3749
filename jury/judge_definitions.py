"""Judge definitions as data: a JSON object of a judge's fields (fixtures/judges/*.json), loaded
by `manage.py load_judges FILE...`. A definition creates the judge of its name or updates it;
it is checked like the admin form checks a judge (the model's fields, the operator's rules on
key variables and endpoint hosts, a structured-output mode its provider has), and nothing is
saved when one of the files is wrong. A definition sets what the admin form sets
(Judge.OPERATOR_FIELDS); "name" is required."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from annotation import audit
from jury.errors import JuryError
from jury.models import Judge

AUDIT_ACTION = "jury.load_judge"


def read_definition(path: Path) -> dict[str, Any]:
    """The JSON object in `path`; JuryError when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise JuryError(f"{path}: not a readable JSON file ({exc})", field="file") from None
    if not isinstance(data, dict):
        raise JuryError(f"{path}: a judge definition is one JSON object", field="file")
    return data


def judge_from_definition(data: Mapping[str, Any], *, source: str = "definition") -> Judge:
    """The judge this definition describes (the stored judge of its name, updated, or a new
    one), validated, not saved; JuryError naming the field when it is wrong."""
    unknown = sorted(set(data) - set(Judge.OPERATOR_FIELDS))
    if unknown:
        raise JuryError(f"{source}: unknown fields {unknown}", field=unknown[0])
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise JuryError(f"{source}: a judge definition needs a name", field="name")
    judge = Judge.objects.filter(name=name).first() or Judge(name=name)
    for field, value in data.items():
        setattr(judge, field, value)
    try:
        judge.full_clean(validate_unique=False)
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        raise JuryError(f"{source}: {field}: {' '.join(messages)}", field=field) from None
    return judge


@transaction.atomic
def load_judge_files(
    paths: Sequence[Path], *, actor: AbstractBaseUser | None = None
) -> list[tuple[Judge, bool]]:
    """Create or update a judge per file (all or none); (judge, created) each, with an audit
    row of what changed."""
    loaded = []
    for path in paths:
        judge = judge_from_definition(read_definition(path), source=str(path))
        created = judge.pk is None
        before = (
            None
            if created
            else {
                f: _plain(getattr(Judge.objects.get(pk=judge.pk), f)) for f in Judge.OPERATOR_FIELDS
            }
        )
        judge.save()
        after = {f: _plain(getattr(judge, f)) for f in Judge.OPERATOR_FIELDS}
        audit.record(actor=actor, action=AUDIT_ACTION, target=judge, before=before, after=after)
        loaded.append((judge, created))
    return loaded


def _plain(value: Any) -> Any:
    """A field's value as JSON (prices are Decimals)."""
    return value if isinstance(value, str | int | float | bool | dict | list | None) else str(value)
