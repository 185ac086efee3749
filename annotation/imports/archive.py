"""Uploaded zips, opened and unpacked under limits: the one place that reads them.

The sizes a zip declares are not trusted. Its list of members (the central directory) is
parsed only when its length fits the member limit; each member is unpacked in chunks,
counting the bytes it really yields, and unpacking stops as soon as a member passes
ZipLimits.member_bytes or the zip passes ZipLimits.total_bytes, so that a zip bomb costs at
most the limit in time and memory. Only stored and deflated members are unpacked: Python
unpacks bzip2 and LZMA data a whole compressed block at a time, which a hostile block can
turn into gigabytes before any count is taken. An encrypted, damaged or oddly compressed
member, or one that unpacks to another size than its header declares, is refused.

Every problem is an AnnotationError (field "file") naming the upload, the member and the
limit, with the setting that sets it.
"""

from __future__ import annotations

import contextlib
import io
import lzma
import struct
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

from django.conf import settings

from annotation.errors import AnnotationError

ZIP_MAGIC = b"PK\x03\x04"
EMPTY_ZIP_MAGIC = b"PK\x05\x06"  # a zip of no member is its end record alone
CHUNK_BYTES = 64 * 1024
# No honest entry of the central directory needs more (46 bytes, a name, an extra field): a
# longer directory is refused before Python builds an object per entry.
CENTRAL_ENTRY_BYTES = 4096
_END_RECORD = 22  # bytes of the end of central directory record, without its comment
_READABLE = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
_METHOD_NAMES = {
    1: "shrink",
    6: "implode",
    9: "Deflate64",
    12: "bzip2",
    14: "LZMA",
    19: "LZ77",
    93: "Zstandard",
    95: "xz",
    96: "JPEG",
    97: "WavPack",
    98: "PPMd",
    99: "AES encryption",
}
_ENCRYPTED = 0x1
# What zipfile and the decompressors raise on a damaged archive.
_DAMAGED = (
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    OSError,
    struct.error,
    ValueError,
    NotImplementedError,
    RuntimeError,
)
_SOURCE = bytes | Path | IO[bytes]


@dataclass(frozen=True)
class ZipLimits:
    """Most bytes one member and the whole zip may unpack to, and most members a zip may
    list. Defaults: settings.MEDHELM_IMPORT_ZIP_MAX_* (see medhelm_site/settings/core.py)."""

    member_bytes: int
    total_bytes: int
    members: int

    @classmethod
    def from_settings(cls) -> ZipLimits:
        return cls(
            member_bytes=settings.MEDHELM_IMPORT_ZIP_MAX_MEMBER_BYTES,
            total_bytes=settings.MEDHELM_IMPORT_ZIP_MAX_TOTAL_BYTES,
            members=settings.MEDHELM_IMPORT_ZIP_MAX_MEMBERS,
        )


def is_zip(head: bytes) -> bool:
    """Whether a file starting with `head` (its first four bytes or more) is a zip."""
    return head.startswith((ZIP_MAGIC, EMPTY_ZIP_MAGIC))


class UploadZip:
    """An uploaded zip, open for reading under limits (a context manager).

    `label` names the upload in every message (its file name). Raises AnnotationError when
    the zip cannot be opened or lists too many members.
    """

    def __init__(self, source: _SOURCE, *, label: str, limits: ZipLimits | None = None) -> None:
        self.label = label
        self.limits = limits or ZipLimits.from_settings()
        self.unpacked_bytes = 0
        self._owned: IO[bytes] | None = None
        if isinstance(source, bytes | bytearray | memoryview):
            stream: IO[bytes] = io.BytesIO(bytes(source))
        elif isinstance(source, Path):
            stream = self._owned = source.open("rb")
        else:
            stream = source
        try:
            self._check_directory_length(stream)
            try:
                self._zip = zipfile.ZipFile(stream)
            except _DAMAGED as exc:
                raise AnnotationError(
                    f"{label} is not a readable zip file ({exc})", field="file"
                ) from None
            count = len(self._zip.infolist())
            if count > self.limits.members:
                self._zip.close()
                raise AnnotationError(
                    f"{label} holds {count} members, more than the limit of "
                    f"{self.limits.members} (MEDHELM_IMPORT_ZIP_MAX_MEMBERS)",
                    field="file",
                )
        except BaseException:
            self._close_owned()
            raise

    def __enter__(self) -> UploadZip:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._zip.close()
        self._close_owned()

    def _close_owned(self) -> None:
        if self._owned is not None:
            self._owned.close()

    @property
    def members(self) -> list[zipfile.ZipInfo]:
        """The zip's files (not its folders), in their order in the zip."""
        return [info for info in self._zip.infolist() if not info.is_dir()]

    def read(self, member: zipfile.ZipInfo) -> bytes:
        """The member's bytes, unpacked under the limits (raises AnnotationError)."""
        limits = self.limits
        parts: list[bytes] = []
        count = 0
        with contextlib.closing(self._unpack(member)) as chunks:
            for chunk in chunks:
                count += len(chunk)
                self.unpacked_bytes += len(chunk)
                if count > limits.member_bytes:
                    raise AnnotationError(
                        f"{member.filename} in {self.label} unpacks to more than "
                        f"{limits.member_bytes:,} bytes, the limit for one member "
                        "(MEDHELM_IMPORT_ZIP_MAX_MEMBER_BYTES); unpacking stopped there",
                        field="file",
                    )
                if self.unpacked_bytes > limits.total_bytes:
                    raise AnnotationError(
                        f"{self.label} unpacks to more than {limits.total_bytes:,} bytes, the "
                        "limit for a whole zip (MEDHELM_IMPORT_ZIP_MAX_TOTAL_BYTES); unpacking "
                        f"stopped inside {member.filename}",
                        field="file",
                    )
                parts.append(chunk)
        return b"".join(parts)

    def unpacks_within(self, budget: int) -> bool:
        """Whether every member together unpacks to at most `budget` bytes; stops counting
        (and unpacking) as soon as they pass it. See expands_within."""
        count = 0
        for member in self.members:
            count += self.count_unpacked(member, most=budget - count)
            if count > budget:
                return False
        return True

    def count_unpacked(self, member: zipfile.ZipInfo, *, most: int) -> int:
        """How many bytes the member unpacks to, counted while unpacking (nothing kept) and
        stopping as soon as the count passes `most`. A member that cannot be unpacked counts
        the bytes it yielded before its problem: whoever reads it meets the problem there."""
        count = 0
        try:
            with contextlib.closing(self._unpack(member)) as chunks:
                for chunk in chunks:
                    count += len(chunk)
                    if count > most:
                        break
        except AnnotationError:
            # Counted up to the problem: the import that reads this member meets the same
            # problem there and reports it with its message (here only sizes are counted).
            return count
        return count

    def _unpack(self, member: zipfile.ZipInfo) -> Iterator[bytes]:
        """The member's bytes chunk by chunk, as they are unpacked; raises AnnotationError
        for a member that cannot be unpacked safely, or once it proves damaged."""
        self._check_readable(member)
        name = member.filename
        count = 0
        try:
            with self._zip.open(member) as stream:
                while chunk := stream.read(CHUNK_BYTES):
                    count += len(chunk)
                    yield chunk
        except _DAMAGED as exc:
            raise AnnotationError(
                f"{name} in {self.label} is damaged and cannot be unpacked ({exc})", field="file"
            ) from None
        if count != member.file_size:
            raise AnnotationError(
                f"{name} in {self.label} is damaged: its header declares "
                f"{member.file_size:,} bytes, but it unpacks to {count:,}",
                field="file",
            )

    def _check_readable(self, member: zipfile.ZipInfo) -> None:
        """Refuse what cannot be unpacked safely, from the member's header alone."""
        name = member.filename
        if member.flag_bits & _ENCRYPTED:
            raise AnnotationError(
                f"{name} in {self.label} is encrypted; upload a zip made without a password",
                field="file",
            )
        method = member.compress_type
        if method not in _READABLE:
            known = _METHOD_NAMES.get(method, "an unknown method")
            raise AnnotationError(
                f"{name} in {self.label} is compressed with {known} (method {method}), which "
                "this site does not unpack; make the zip again with the usual deflate "
                "compression (or none)",
                field="file",
            )
        if member.file_size > self.limits.member_bytes:
            raise AnnotationError(
                f"{name} in {self.label} declares {member.file_size:,} bytes unpacked, more "
                f"than {self.limits.member_bytes:,} bytes, the limit for one member "
                "(MEDHELM_IMPORT_ZIP_MAX_MEMBER_BYTES)",
                field="file",
            )

    def _check_directory_length(self, stream: IO[bytes]) -> None:
        """Refuse a central directory longer than the member limit allows, before zipfile
        parses it (it builds an object per entry, whatever count the zip declares)."""
        length = _central_directory_length(stream)
        most = self.limits.members * CENTRAL_ENTRY_BYTES
        if length is not None and length > most:
            raise AnnotationError(
                f"{self.label}: its list of members takes {length:,} bytes, more than "
                f"{self.limits.members} members need (MEDHELM_IMPORT_ZIP_MAX_MEMBERS)",
                field="file",
            )


def expands_within(source: _SOURCE, *, budget: int, label: str = "the zip") -> bool:
    """Whether unpacking every member of the zip yields at most `budget` bytes in all.

    Counts while unpacking and stops as soon as the count passes `budget`, so it costs at
    most that much. A member that cannot be unpacked counts the bytes it yielded before its
    problem, and a zip that cannot be opened counts nothing: whoever reads it later meets
    the same problem at the same point, having unpacked no more.
    """
    try:
        archive = UploadZip(source, label=label)
    except AnnotationError:
        return True
    with archive:
        return archive.unpacks_within(budget)


def _central_directory_length(stream: IO[bytes]) -> int | None:
    """The length the zip's end records give its central directory, found as zipfile finds
    them (the zip64 record when its locator precedes the end record); None when there is no
    end record (zipfile then refuses the file itself)."""
    stream.seek(0, io.SEEK_END)
    size = stream.tell()
    tail_length = min(size, _END_RECORD + 0xFFFF)  # the end record and the longest comment
    stream.seek(size - tail_length)
    tail = stream.read(tail_length)
    if tail[-_END_RECORD:][:4] == b"PK\x05\x06":
        end = len(tail) - _END_RECORD
    else:
        end = tail.rfind(b"PK\x05\x06")
    if end < 0 or end + _END_RECORD > len(tail):
        stream.seek(0)
        return None
    (length,) = struct.unpack("<I", tail[end + 12 : end + 16])
    end_position = size - tail_length + end
    if end_position >= 20 + 56:
        stream.seek(end_position - 20)
        locator = stream.read(20)
        if locator[:4] == b"PK\x06\x07":
            stream.seek(end_position - 20 - 56)
            record = stream.read(56)
            if record[:4] == b"PK\x06\x06":
                (length,) = struct.unpack("<Q", record[40:48])
    stream.seek(0)
    return length
