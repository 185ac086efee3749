"""Importing human ratings collected elsewhere from a long file (CSV or JSONL).

Columns: external_id, model, rater (a pseudonym), criterion, value, and optionally comment
and the marks the long export writes (attention check and calibration item, with the range
or reference of the row's criterion), which must agree with the study's own marks
(annotation.imports.longmarks).
Any design is accepted (raters may differ per item). Raters become pseudonymous study
members flagged as imported: inactive memberships of users who cannot log in, so that no
assignment is ever dealt to them. All or nothing: every bad line is reported (the first
ones kept in memory, all of them in a job's error file: longerrors) and nothing is written
unless the whole file is good. The file is read line by line, never whole. A line whose rating is stored already with the
same value and comment is unchanged (importing a file twice changes nothing); a different
value or comment refuses the import.
"""

from __future__ import annotations

import functools
import hashlib
import secrets
from dataclasses import dataclass, field
from typing import IO

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation import audit
from annotation.errors import AnnotationError, LongFileRefused
from annotation.imports.longchecks import ITEM_ALIASES, StudyIndex, scale_value, text_cell
from annotation.imports.longerrors import LineErrors
from annotation.imports.longfile import LineCallback, LineError, LongRecord, long_records
from annotation.imports.longmarks import MARK_COLUMNS, StudyMarks
from annotation.locking import refuse_if_locked
from annotation.models import ImportedRating, RatingStudy, StudyMembership

RATING_COLUMNS = ("external_id", "model", "rater", "criterion", "value")
RATING_OPTIONAL = ("comment", *MARK_COLUMNS)
RATING_ALIASES = {**ITEM_ALIASES, "pseudonym": "rater", "rater_pseudonym": "rater"}
PSEUDONYM_MAX = StudyMembership._meta.get_field("pseudonym").max_length


@dataclass(frozen=True)
class LongImportSummary:
    """What an import of a long file did: lines read, scores created and unchanged, and the
    raters (or judges, metrics) that were new to the study."""

    file_format: str
    lines: int
    created: int
    unchanged: int
    new_names: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # every rater (judge, metric) in the file

    def as_dict(self) -> dict:
        return {
            "file_format": self.file_format,
            "lines": self.lines,
            "created": self.created,
            "unchanged": self.unchanged,
            "new_names": self.new_names,
            "names": self.names,
        }


@dataclass(frozen=True, slots=True)
class _Line:
    line: int
    item_id: int
    rater: str
    criterion_id: int
    value: float
    comment: str


def file_digest(data: bytes | IO[bytes]) -> str:
    """The SHA-256 of an imported file, so that the audit row names exactly what came in (a
    stream is read in chunks from its start and put back where it was)."""
    if isinstance(data, bytes | bytearray):
        return hashlib.sha256(data).hexdigest()
    digest = hashlib.sha256()
    position = data.tell()
    data.seek(0)
    for chunk in iter(functools.partial(data.read, 1024 * 1024), b""):
        digest.update(chunk)
    data.seek(position)
    return digest.hexdigest()


def import_ratings(
    *,
    study: RatingStudy,
    data: bytes | IO[bytes],
    name: str,
    actor: AbstractBaseUser | None,
    errors: LineErrors | None = None,
    on_line: LineCallback | None = None,
) -> LongImportSummary:
    """Import the ratings of a long file (bytes, or a seekable binary stream read line by
    line) into `study`; raise LongFileRefused with the first errors and their count (all of
    them go to `errors`, given one that spools them), or AnnotationError for a locked study.
    The lines are checked first, outside any transaction (`on_line` hears the progress);
    the save checks again what may have changed meanwhile, in one transaction."""
    errors = LineErrors() if errors is None else errors
    refuse_if_locked(study=study, error=AnnotationError, what="ratings")
    members = _members(study)
    checker = _Checker(study, members, _stored(study))
    file_format, records = long_records(
        data,
        name=name,
        required=RATING_COLUMNS,
        optional=RATING_OPTIONAL,
        aliases=RATING_ALIASES,
        errors=errors,
        on_line=on_line,
    )
    n_records = 0
    for record in records:
        n_records += 1
        line_errors: list[LineError] = []
        checker.check(record, line_errors)
        errors.extend(line_errors)
    if errors:
        raise LongFileRefused(errors.first, count=errors.count, noun="ratings")
    with transaction.atomic():
        study = RatingStudy.objects.select_for_update().get(pk=study.pk)
        refuse_if_locked(study=study, error=AnnotationError, what="ratings")
        # Someone may have imported, or joined under a pseudonym, since the lines were read.
        late: list[LineError] = []
        members = _members(study)
        lines = [line for line in checker.lines if _own_pseudonym(line, members, late)]
        new, unchanged = _against_stored(lines, _stored(study), late)
        if late:
            errors.extend(sorted(late, key=lambda e: e.line))
            raise LongFileRefused(errors.first, count=errors.count, noun="ratings")
        raters = sorted({line.rater for line in lines})
        new_raters = [r for r in raters if r not in members]
        for pseudonym in new_raters:
            members[pseudonym] = _imported_member(study, pseudonym, actor)
        ImportedRating.objects.bulk_create(
            (
                ImportedRating(
                    study=study,
                    item_id=line.item_id,
                    rater=members[line.rater],
                    criterion_id=line.criterion_id,
                    value=line.value,
                    comment=line.comment,
                    created_by=actor if actor is not None and actor.is_authenticated else None,
                )
                for line in new
            ),
            batch_size=2000,
        )
        summary = LongImportSummary(
            file_format=file_format,
            lines=n_records,
            created=len(new),
            unchanged=unchanged,
            new_names=new_raters,
            names=raters,
        )
        if new:
            audit.record(
                actor=actor,
                action="ratings.import",
                target=study,
                study=study,
                after={"file": name, "sha256": file_digest(data), **summary.as_dict()},
            )
    return summary


def _members(study: RatingStudy) -> dict[str, StudyMembership]:
    return {m.pseudonym: m for m in StudyMembership.objects.filter(study=study)}


def _own_pseudonym(
    line: _Line, members: dict[str, StudyMembership], errors: list[LineError]
) -> bool:
    """Whether the line's rater is not the pseudonym of a member who takes part on this
    site; if it is, the reason goes to `errors`."""
    member = members.get(line.rater)
    if member is None or member.is_imported:
        return True
    reason = (
        f"{line.rater!r} is the pseudonym of a member who takes part on this site; "
        "give imported raters pseudonyms of their own"
    )
    errors.append(LineError(line.line, "rater", reason))
    return False


class _Checker:
    """Checks one record at a time against the study, keeping the good lines (the save
    needs them all: an import is all or nothing) and nothing of the bad ones."""

    def __init__(
        self,
        study: RatingStudy,
        members: dict[str, StudyMembership],
        stored: dict[tuple[int, str, int], tuple[float, str]],
    ) -> None:
        self.index = StudyIndex.of(study)
        self.marks = StudyMarks.of(study)
        self.members = members
        self.stored = stored
        self.first_line: dict[tuple[int, str, int], int] = {}
        self.lines: list[_Line] = []

    def check(self, record: LongRecord, errors: list[LineError]) -> None:
        """Keep the record's line if it is good; else its problems go to `errors`."""
        item_id = self.index.item(record, errors)
        criterion = self.index.criterion(record, errors)
        value = scale_value(record, criterion, errors)
        rater = text_cell(record, "rater", errors, max_length=PSEUDONYM_MAX)
        if rater:
            probe = _Line(record.line, 0, rater, 0, 0.0, "")
            _own_pseudonym(probe, self.members, errors)
        if item_id is not None and criterion is not None:
            self.marks.check(record, item_id, criterion.key, errors)
        if errors:
            return
        key = (item_id, rater, criterion.pk)
        if key in self.first_line:
            reason = (
                f"rater {rater!r} rates {criterion.key} of this item twice "
                f"(first at line {self.first_line[key]})"
            )
            errors.append(LineError(record.line, "rater", reason))
            return
        self.first_line[key] = record.line
        comment = record.cells["comment"]
        if "\x00" in comment:
            errors.append(LineError(record.line, "comment", "contains a NUL character"))
            return
        line = _Line(record.line, item_id, rater, criterion.pk, value, comment)
        _against_stored([line], self.stored, errors)
        if not errors:
            self.lines.append(line)


def _stored(study: RatingStudy) -> dict[tuple[int, str, int], tuple[float, str]]:
    """(item, rater pseudonym, criterion) -> (value, comment) of the imported ratings."""
    return {
        (item_id, rater, criterion_id): (value, comment)
        for item_id, rater, criterion_id, value, comment in ImportedRating.objects.filter(
            study=study
        ).values_list("item_id", "rater__pseudonym", "criterion_id", "value", "comment")
    }


def _against_stored(
    lines: list[_Line],
    stored: dict[tuple[int, str, int], tuple[float, str]],
    errors: list[LineError],
) -> tuple[list[_Line], int]:
    """(lines to create, how many are stored already as they are); conflicts to `errors`."""
    new: list[_Line] = []
    unchanged = 0
    for line in lines:
        existing = stored.get((line.item_id, line.rater, line.criterion_id))
        if existing is None:
            new.append(line)
        elif existing == (line.value, line.comment):
            unchanged += 1
        else:
            value, comment = existing
            what = f"the value {value:g}" if value != line.value else f"the comment {comment!r}"
            reason = (
                f"conflicts with the rating imported before, which has {what}; an import "
                "never changes a stored rating"
            )
            errors.append(
                LineError(line.line, "value" if value != line.value else "comment", reason)
            )
    return new, unchanged


def _imported_member(
    study: RatingStudy, pseudonym: str, actor: AbstractBaseUser | None
) -> StudyMembership:
    """A user who cannot log in, and their inactive clinician membership flagged imported."""
    user_model = get_user_model()
    user = user_model(username=f"imported-s{study.pk}-{secrets.token_hex(8)}", is_active=False)
    user.set_unusable_password()
    user.save()
    membership = StudyMembership.objects.create(
        study=study,
        user=user,
        role=StudyMembership.Role.CLINICIAN,
        pseudonym=pseudonym,
        is_active=False,
        is_imported=True,
    )
    audit.record(
        actor=actor,
        action="membership.import",
        target=membership,
        study=study,
        after={"pseudonym": pseudonym, "role": membership.role, "imported": True},
    )
    return membership
