"""HELM suites: benchmark_output/runs/<suite>/, a folder of run directories (each with its
run_spec.json and scenario_state.json), as a folder or a zip.

A suite is read one run at a time (SuiteZip.runs names the run directories, read_run reads
one), so that a suite of hundreds of runs is never in memory whole. A folder is packed into
a zip file on disk (pack_helm_folder: only the two files a run is read from) and imported
like an uploaded zip. In a suite zip the limit on the bytes a zip unpacks to
(MEDHELM_IMPORT_ZIP_MAX_TOTAL_BYTES) holds for each run, all the runs together may unpack to
MEDHELM_IMPORT_MAX_UNPACKED_BYTES (SuiteZip.check_unpacked_total, counted before any run is
read, so that a suite above it is refused whole), and the zip may list up to
MEDHELM_IMPORT_SUITE_MAX_MEMBERS members (a HELM run directory holds about ten files).
"""

from __future__ import annotations

import zipfile
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import IO

from django.conf import settings

from annotation.errors import AnnotationError
from annotation.imports.archive import UploadZip, ZipLimits
from annotation.imports.helm import HelmRun, run_from_files
from annotation.imports.rows import RowError

STATE = "scenario_state.json"
SPEC = "run_spec.json"
RUN_FILES = (STATE, SPEC)
EXPECTED = (
    "a HELM run directory (holding scenario_state.json and run_spec.json) or a suite "
    "(benchmark_output/runs/<suite>/: run directories, each holding them)"
)


def suite_limits() -> ZipLimits:
    """The zip limits of a suite: the member limit of suites, the byte limits per run."""
    return ZipLimits(
        member_bytes=settings.MEDHELM_IMPORT_ZIP_MAX_MEMBER_BYTES,
        total_bytes=settings.MEDHELM_IMPORT_ZIP_MAX_TOTAL_BYTES,
        members=settings.MEDHELM_IMPORT_SUITE_MAX_MEMBERS,
    )


class SuiteZip:
    """A zip holding HELM run directories, open for reading one run at a time (a context
    manager). `runs` are the run directories' paths in the zip, sorted: every folder with
    a scenario_state.json or a run_spec.json (a run that lacks one of them is a bad run,
    named, not passed over)."""

    def __init__(self, source: Path | IO[bytes], *, label: str) -> None:
        self.label = label
        self._zip = UploadZip(source, label=label, limits=suite_limits())
        self._files: dict[str, dict[str, zipfile.ZipInfo]] = {}
        for info in self._zip.members:
            path = PurePosixPath(info.filename)
            if path.name in RUN_FILES and not info.filename.startswith("__MACOSX/"):
                self._files.setdefault(str(path.parent), {})[path.name] = info
        self.runs = sorted(self._files)

    def __enter__(self) -> SuiteZip:
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

    def check_unpacked_total(self) -> None:
        """Unpack the files of every run once, counting their bytes (nothing is kept), and
        raise AnnotationError (field "file") naming the limit and the run where the count
        passes settings.MEDHELM_IMPORT_MAX_UNPACKED_BYTES; it stops unpacking there."""
        limit = settings.MEDHELM_IMPORT_MAX_UNPACKED_BYTES
        total = 0
        for folder in self.runs:
            before = total
            for info in self._files[folder].values():
                total += self._zip.count_unpacked(info, most=limit - total)
                if total > limit:
                    raise AnnotationError(
                        f"{self.label} unpacks to more than {limit:,} bytes, the limit for all "
                        "the runs of one upload together (MEDHELM_IMPORT_MAX_UNPACKED_BYTES): "
                        f"the runs before {folder}/ unpack to {before:,} bytes and run "
                        f"{folder}/ passes the limit; unpacking stopped there",
                        field="file",
                    )

    def read_run(self, folder: str) -> HelmRun:
        """The run in `folder` (one of `runs`); a problem of its files is the run's error."""
        files = self._files[folder]
        name = PurePosixPath(folder).name if folder != "." else ""
        if STATE not in files:
            reason = f"no {STATE} in {folder}/ of {self.label}"
            return HelmRun(None, run_name=name, problems=(RowError("file", reason, -1),))
        self._zip.unpacked_bytes = 0  # the byte limit of a whole zip holds for each run
        try:
            state = self._zip.read(files[STATE])
            spec = self._zip.read(files[SPEC]) if SPEC in files else None
        except AnnotationError as exc:
            return HelmRun(None, run_name=name, problems=(RowError("file", exc.message, -1),))
        return run_from_files(scenario_state=state, run_spec=spec, run_name=name)


def open_suite(source: Path, *, label: str) -> SuiteZip | None:
    """The suite in the zip at `source` when it holds more than one run directory; None for
    a zip of one run (or none, or one that cannot be opened: the run import says why)."""
    try:
        suite = SuiteZip(source, label=label)
    except AnnotationError:
        return None
    if len(suite.runs) > 1:
        return suite
    suite.close()
    return None


# --- folders -----------------------------------------------------------------------------------


def run_directories(folder: Path) -> list[Path]:
    """The run directories of a suite folder: its sub-folders holding scenario_state.json or
    run_spec.json, sorted by name."""
    return sorted(
        child
        for child in folder.iterdir()
        if child.is_dir() and any((child / name).is_file() for name in RUN_FILES)
    )


def folder_kind(folder: Path) -> str:
    """ "run" or "suite"; raises AnnotationError naming what was expected otherwise."""
    if (folder / STATE).is_file():
        return "run"
    if run_directories(folder):
        return "suite"
    raise AnnotationError(
        f"{folder} holds neither a HELM run nor a suite: expected {EXPECTED}", field="file"
    )


def pack_helm_folder(folder: Path, out: IO[bytes]) -> int:
    """Write a zip of a run directory or a suite folder to `out`, file by file from disk
    (never the whole suite in memory): each run's scenario_state.json and run_spec.json
    under <run directory>/. Returns how many run directories it holds."""
    runs = [folder] if folder_kind(folder) == "run" else run_directories(folder)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for run in runs:
            for name in RUN_FILES:
                if (run / name).is_file():
                    archive.write(run / name, f"{run.name}/{name}")
    return len(runs)
