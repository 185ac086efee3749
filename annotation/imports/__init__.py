"""Item imports: JSONL, CSV and HELM runs read into checked rows, saved by an import job.

The modules, each about one thing: rows (fields, row errors, parsed rows), jsonl, csvfile,
helm (also read by the jury for its verdicts), helm_files (a run's files), helm_choices
(multiple-choice states), suite (HELM suites: many run directories, read one at a time),
placement (HELM items filed under the MedHELM taxonomy by benchmark), archive (uploaded
zips, unpacked under limits), validation (checks across rows and against the study),
formats (the dispatch by format name), uploads (the size limit, where uploads are kept and
when they go), jobs (start, run, save), long_jobs (ratings and scores files as jobs),
longfile/longchecks/longmarks/longerrors (reading and checking them), suite_jobs (a suite's job, run by run), job_state
(what both jobs share), after_import (the steps after a succeeded import) and progress.
"""

from annotation.imports.archive import ZIP_MAGIC
from annotation.imports.csvfile import parse_csv
from annotation.imports.formats import FORMATS, parse
from annotation.imports.helm import (
    HelmRun,
    HelmSource,
    helm_benchmark_name,
    helm_rows,
    pack_helm_run,
    parse_helm_run,
    read_helm_run,
)
from annotation.imports.jobs import run_import_job, start_import, start_long_import
from annotation.imports.jsonl import parse_jsonl
from annotation.imports.long_jobs import long_import_progress
from annotation.imports.progress import FINISHED, MAX_STORED_ERRORS, import_progress
from annotation.imports.rows import ParsedImport, ParsedRow, RowError
from annotation.imports.uploads import (
    UploadSizeLimit,
    limit_upload_size,
    max_upload_bytes,
    release_upload,
)
from annotation.imports.validation import (
    Fingerprint,
    conflict_reason,
    item_fingerprint,
    validate_rows,
)
from annotation.selectors.taxonomy import task_names_for

__all__ = [
    "FINISHED",
    "FORMATS",
    "MAX_STORED_ERRORS",
    "ZIP_MAGIC",
    "Fingerprint",
    "HelmRun",
    "HelmSource",
    "ParsedImport",
    "ParsedRow",
    "RowError",
    "UploadSizeLimit",
    "conflict_reason",
    "helm_benchmark_name",
    "helm_rows",
    "import_progress",
    "item_fingerprint",
    "limit_upload_size",
    "long_import_progress",
    "max_upload_bytes",
    "pack_helm_run",
    "parse",
    "parse_csv",
    "parse_helm_run",
    "parse_jsonl",
    "read_helm_run",
    "release_upload",
    "run_import_job",
    "start_import",
    "start_long_import",
    "task_names_for",
    "validate_rows",
]
