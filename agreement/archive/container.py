"""The study archive as a file: a zip of JSON Lines members and a manifest naming the format
version and, per member, its row count and SHA-256. Reading checks all three before any row
is used, so a damaged or foreign file is refused whole."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

from agreement.errors import AgreementError

FORMAT = "medhelm-studio study archive"
FORMAT_VERSION = 2
# The versions this site reads (an older one lacks the members added since).
READS = (1, 2)
MANIFEST = "manifest.json"
# The members of the archive, in the order an import reads them.
MEMBERS = (
    "study.jsonl",
    "people.jsonl",
    "memberships.jsonl",
    "criteria.jsonl",
    "items.jsonl",
    "assignments.jsonl",
    "ratings.jsonl",
    "imported_ratings.jsonl",
    "attention_checks.jsonl",
    "calibration_items.jsonl",
    "calibration_completions.jsonl",
    "judges.jsonl",
    "prompt_templates.jsonl",
    "jury_runs.jsonl",
    "judge_calls.jsonl",
    "judge_scores.jsonl",
    "metric_scores.jsonl",
    "report_snapshots.jsonl",
    "audit.jsonl",
)
# The format version each member first appeared in (the others: version 1).
SINCE = {
    "attention_checks.jsonl": 2,
    "calibration_items.jsonl": 2,
    "calibration_completions.jsonl": 2,
}
# A zip member larger than this once inflated is refused (a zip bomb, not a study).
MAX_MEMBER_BYTES = 2 * 1024**3


class ArchiveError(AgreementError):
    """A study archive that cannot be read or imported; `field` names the member at fault."""


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal | UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not archived")


def jsonl(rows: Sequence[Mapping[str, Any]]) -> bytes:
    return b"".join(
        json.dumps(row, default=_plain, ensure_ascii=False, sort_keys=True).encode() + b"\n"
        for row in rows
    )


def write_archive(tables: Mapping[str, Sequence[Mapping[str, Any]]], *, study_name: str) -> bytes:
    """The zip of `tables` (one member per name of MEMBERS) and its manifest."""
    buffer = io.BytesIO()
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "study": study_name,
        "members": {},
    }
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in MEMBERS:
            body = jsonl(tables[name])
            archive.writestr(name, body)
            manifest["members"][name] = {
                "rows": len(tables[name]),
                "sha256": hashlib.sha256(body).hexdigest(),
            }
        archive.writestr(MANIFEST, json.dumps(manifest, indent=1, ensure_ascii=False))
    return buffer.getvalue()


def _manifest(archive: zipfile.ZipFile) -> dict[str, Any]:
    try:
        manifest = json.loads(archive.read(MANIFEST))
    except KeyError:
        raise ArchiveError("the file has no manifest.json", field=MANIFEST) from None
    except ValueError as exc:
        raise ArchiveError(f"manifest.json is not JSON: {exc}", field=MANIFEST) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArchiveError(f"manifest.json does not describe a {FORMAT}", field=MANIFEST)
    version = manifest.get("format_version")
    if isinstance(version, bool) or version not in READS:
        raise ArchiveError(
            f"format version {version!r} is not one this site reads (it reads "
            f"{', '.join(map(str, READS))})",
            field="format_version",
        )
    return manifest


def _member(archive: zipfile.ZipFile, name: str, expected: Mapping[str, Any]) -> list[dict]:
    try:
        info = archive.getinfo(name)
    except KeyError:
        raise ArchiveError(f"{name} is missing from the archive", field=name) from None
    if info.file_size > MAX_MEMBER_BYTES:
        raise ArchiveError(f"{name} is larger than {MAX_MEMBER_BYTES} bytes", field=name)
    body = archive.read(name)
    if hashlib.sha256(body).hexdigest() != expected.get("sha256"):
        raise ArchiveError(
            f"{name} does not match its SHA-256 in the manifest: the file is damaged or was edited",
            field=name,
        )
    try:
        rows = [json.loads(line) for line in body.decode().splitlines() if line]
    except ValueError as exc:
        raise ArchiveError(f"{name} is not JSON Lines: {exc}", field=name) from None
    if len(rows) != expected.get("rows"):
        raise ArchiveError(
            f"{name} holds {len(rows)} rows, the manifest says {expected.get('rows')}", field=name
        )
    return rows


def read_archive(data: bytes) -> dict[str, list[dict[str, Any]]]:
    """Every member's rows, after the format version, hashes and counts are checked; a
    member newer than the archive's version holds no rows."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise ArchiveError("the file is not a zip archive", field="file") from None
    with archive:
        manifest = _manifest(archive)
        listed = manifest.get("members") or {}
        version = manifest["format_version"]
        return {
            name: _member(archive, name, listed.get(name) or {})
            if SINCE.get(name, 1) <= version
            else []
            for name in MEMBERS
        }
