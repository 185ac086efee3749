"""Where uploaded item files are kept and for how long, and how large they may be.

An upload is refused above settings.MEDHELM_IMPORT_MAX_UPLOAD_BYTES: by the page before its
body is read (UploadSizeLimit), by start_import before it is stored (a size the source
declares) or while it is stored (the bytes counted). A stored upload lives under
MEDIA_ROOT/imports/ until its job has ended, the steps after the import included (they may
read it again); release_upload then deletes it.
"""

from __future__ import annotations

import codecs
import functools
import logging
import os
import tempfile
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpRequest

from annotation.errors import AnnotationError
from annotation.imports.archive import expands_within, is_zip
from annotation.imports.progress import FINISHED
from annotation.models import ImportJob

logger = logging.getLogger(__name__)

UPLOAD_DIR = "imports"
# The other fields of the import form and the multipart framing: a request body longer
# than the file limit by more than this cannot hold a file within the limit.
FORM_OVERHEAD_BYTES = 64 * 1024
_WHITESPACE = b" \t\r\n\f\v"


def max_upload_bytes() -> int:
    """The largest file an import accepts (settings.MEDHELM_IMPORT_MAX_UPLOAD_BYTES)."""
    return settings.MEDHELM_IMPORT_MAX_UPLOAD_BYTES


def too_large(name: str, *, size: int | None = None) -> AnnotationError:
    """The error for an upload above the limit, naming the file, its size if known, the
    limit and the setting."""
    limit = max_upload_bytes()
    measured = f" ({size:,} bytes)" if size is not None else ""
    return AnnotationError(
        f"{name}{measured} is larger than {limit:,} bytes, the largest file an import "
        "accepts (MEDHELM_IMPORT_MAX_UPLOAD_BYTES)",
        field="file",
    )


# --- receiving ---------------------------------------------------------------------------------


class UploadSizeLimit(FileUploadHandler):
    """The first upload handler of the import page: it stops reading the request body as
    soon as it is known to carry a file above the limit, from the request's length or from
    the bytes received, so that such a file is never read in full. The page then reads
    `refusal` and answers 400."""

    def __init__(self, request: HttpRequest | None = None) -> None:
        super().__init__(request)
        self.limit = max_upload_bytes()
        self.body_length = 0
        self.refusal: AnnotationError | None = None

    def handle_raw_input(
        self,
        input_data: IO[bytes],
        META: dict[str, Any],  # Django's name for it
        content_length: int,
        boundary: bytes,
        encoding: str | None = None,
    ) -> None:
        self.body_length = content_length
        return None  # the multipart parser goes on, with this handler first

    def new_file(self, field_name: str, file_name: str, *args: Any, **kwargs: Any) -> None:
        super().new_file(field_name, file_name, *args, **kwargs)
        if self.body_length > self.limit + FORM_OVERHEAD_BYTES:
            self._refuse()

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        if start + len(raw_data) > self.limit:
            self._refuse()
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handler stores the file

    def _refuse(self) -> None:
        self.refusal = too_large(self.file_name or "the file")
        raise StopUpload(connection_reset=True)


def limit_upload_size(request: HttpRequest) -> UploadSizeLimit:
    """Put an UploadSizeLimit before the request's upload handlers and return it. Call
    before anything reads request.POST or request.FILES (the view must be csrf_exempt and
    check the token itself, with csrf_protect, after this)."""
    handler = UploadSizeLimit(request)
    request.upload_handlers.insert(0, handler)
    return handler


# --- storing -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredUpload:
    """An upload written under MEDIA_ROOT: its path relative to MEDIA_ROOT, its size,
    whether it holds nothing but whitespace (a UTF-8 byte order mark included), and whether
    it is a zip to unpack (a HELM run directory)."""

    path: str
    size: int
    blank: bool
    is_zip: bool

    @property
    def absolute(self) -> Path:
        return Path(settings.MEDIA_ROOT) / self.path

    def provably_small(self) -> bool:
        """Whether reading it costs little enough for a web request: below
        settings.MEDHELM_IMPORT_INLINE_MAX_BYTES, and for a zip, unpacking to no more
        either (counted while unpacking, at most that many bytes)."""
        budget = settings.MEDHELM_IMPORT_INLINE_MAX_BYTES
        if self.size >= budget:
            return False
        return not self.is_zip or expands_within(self.absolute, budget=budget)


def store_upload(*, content: bytes | IO[bytes], name: str, file_format: str) -> StoredUpload:
    """Write an upload under MEDIA_ROOT/imports/ atomically (a temporary file, then a
    rename), counting its bytes. Raises AnnotationError, leaving nothing behind, for a source
    above the limit: at once when it declares its size, else once the count passes it."""
    limit = max_upload_bytes()
    declared = _declared_size(content)
    if declared is not None and declared > limit:
        raise too_large(name, size=declared)
    folder = Path(settings.MEDIA_ROOT) / UPLOAD_DIR
    folder.mkdir(parents=True, exist_ok=True)
    size, head, blank = 0, b"", True
    fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=".upload-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in _chunks(content):
                size += len(chunk)
                if size > limit:
                    raise too_large(name)
                if len(head) < 4:
                    head += chunk[:4]
                if blank:
                    blank = not _without_bom(chunk, first=size == len(chunk)).strip(_WHITESPACE)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        extension = _extension(file_format, head)
        stored = f"{uuid.uuid4().hex}.{extension}"
        os.replace(tmp_name, folder / stored)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return StoredUpload(
        path=f"{UPLOAD_DIR}/{stored}", size=size, blank=blank, is_zip=extension == "zip"
    )


def _extension(file_format: str, head: bytes) -> str:
    if file_format == "helm":
        return "zip" if is_zip(head) else "json"
    return file_format


def _without_bom(chunk: bytes, *, first: bool) -> bytes:
    return chunk.removeprefix(codecs.BOM_UTF8) if first else chunk


def _declared_size(content: bytes | IO[bytes]) -> int | None:
    """The size a source states without being read: bytes, a Django UploadedFile, a file."""
    if isinstance(content, bytes | bytearray | memoryview):
        return len(content)
    size = getattr(content, "size", None)
    if isinstance(size, int):
        return size
    try:
        return os.fstat(content.fileno()).st_size - content.tell()
    except (AttributeError, OSError, ValueError):
        return None


def _chunks(content: bytes | IO[bytes]) -> Iterable[bytes]:
    if isinstance(content, bytes | bytearray | memoryview):
        yield bytes(content)
    elif hasattr(content, "chunks"):  # a Django UploadedFile
        yield from content.chunks()
    else:
        yield from iter(functools.partial(content.read, 1024 * 1024), b"")


# --- deleting ----------------------------------------------------------------------------------


def release_upload(*, job_id: int) -> None:
    """Delete the stored upload of job `job_id` if the job has ended (succeeded or failed);
    a job still queued or running keeps it. Called once nothing will read it again: after
    a failure, or after the last step that follows a succeeded import. The job keeps
    source_path, to say which file it was."""
    job = ImportJob.objects.filter(pk=job_id).only("status", "source_path").first()
    if job is None or job.status not in FINISHED or not job.source_path:
        return
    folder = (Path(settings.MEDIA_ROOT) / UPLOAD_DIR).resolve()
    path = (Path(settings.MEDIA_ROOT) / job.source_path).resolve()
    if path.parent != folder:  # never delete outside the uploads folder
        logger.error("import job %s names an upload outside %s: %s", job_id, folder, path)
        return
    try:
        path.unlink(missing_ok=True)
    except OSError:
        logger.exception("could not delete the upload of import job %s", job_id)
