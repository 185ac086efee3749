"""Writes of the agreement app: report snapshots (parameters, computing, what moved) and the
exports of a stored snapshot. Raters appear by study pseudonym, judge name or metric key."""

from agreement.services.changes import COMPARED_FIELDS, TOLERANCE, compare_results
from agreement.services.computing import (
    canonical_hash,
    compute_report,
    jsonable,
    software_versions,
)
from agreement.services.exports import (
    CSV_COLUMNS,
    SENSITIVITY_STATISTICS,
    export_csv,
    export_json,
    export_latex,
    export_markdown,
    methods_text,
    report_table2,
    stated_method,
)
from agreement.services.jobs import (
    fail_stale_jobs,
    request_recomputation,
    request_report,
    run_report_job,
)
from agreement.services.parameters import (
    DEFAULT_PARAMETERS,
    MAX_RESAMPLES,
    MAX_SEED,
    normalise_parameters,
)
from agreement.services.renderings import (
    DOWNLOADS,
    RENDERINGS,
    export_figure,
    export_pdf,
    page_body,
    page_figures,
    rendering_of,
)
from agreement.services.scores import scores_csv, scores_dictionary, scores_parquet, tidy_table
from agreement.services.snapshots import create_snapshot, recompute_snapshot

__all__ = [
    "COMPARED_FIELDS",
    "CSV_COLUMNS",
    "DEFAULT_PARAMETERS",
    "DOWNLOADS",
    "MAX_RESAMPLES",
    "MAX_SEED",
    "RENDERINGS",
    "SENSITIVITY_STATISTICS",
    "TOLERANCE",
    "canonical_hash",
    "compare_results",
    "compute_report",
    "create_snapshot",
    "export_csv",
    "export_figure",
    "export_json",
    "export_latex",
    "export_markdown",
    "export_pdf",
    "fail_stale_jobs",
    "jsonable",
    "methods_text",
    "normalise_parameters",
    "page_body",
    "page_figures",
    "recompute_snapshot",
    "rendering_of",
    "report_table2",
    "request_recomputation",
    "request_report",
    "run_report_job",
    "scores_csv",
    "scores_dictionary",
    "scores_parquet",
    "software_versions",
    "stated_method",
    "tidy_table",
]
