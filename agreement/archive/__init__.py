"""A whole rating study as one file, and back: `study_archive` writes it, `import_study`
reads it as a new study (all or nothing). Format in agreement.archive.container."""

from agreement.archive.container import FORMAT_VERSION, ArchiveError, read_archive
from agreement.archive.export import export_study, study_archive
from agreement.archive.restore import import_study

__all__ = [
    "FORMAT_VERSION",
    "ArchiveError",
    "export_study",
    "import_study",
    "read_archive",
    "study_archive",
]
