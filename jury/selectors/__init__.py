"""Reads for the jury, one module per subject: a run's progress and judge health
(progress), a study's runs and what a new run may be narrowed to (runs), its prompt
versions (prompts), a run's calls, attempts, errors and flags (calls), why a run does not
move (waiting), and what the run page polls (status). The parts import one another, never
this package: it only re-exports them, so callers keep writing `selectors.run_progress`."""

from jury.selectors.calls import (
    ATTEMPT_COLUMNS,
    CALL_COLUMNS,
    ERROR_REASON_CHARS,
    FLAGGED_CALLS_SHOWN,
    TOP_ERROR_REASONS,
    ErrorReason,
    FlaggedCall,
    RunErrors,
    RunFlags,
    attempt_rows,
    call_rows,
    run_errors,
    run_flags,
    truncated_calls,
)
from jury.selectors.progress import (
    FAILED,
    JudgeHealth,
    RunProgress,
    judge_health,
    run_progress,
)
from jury.selectors.prompts import latest_prompt_template, prompt_versions
from jury.selectors.runs import (
    RECENT_RUNS,
    FilterChoices,
    recent_runs,
    run_filter_choices,
    study_run,
)
from jury.selectors.status import RESUMABLE_CALLS, can_resume, eta_text, run_status
from jury.selectors.waiting import (
    WAITING_AFTER_SECONDS,
    ProviderOutage,
    RunWaiting,
    provider_outages,
    run_waiting,
)

__all__ = [
    "ATTEMPT_COLUMNS",
    "CALL_COLUMNS",
    "ERROR_REASON_CHARS",
    "FAILED",
    "FLAGGED_CALLS_SHOWN",
    "RECENT_RUNS",
    "RESUMABLE_CALLS",
    "TOP_ERROR_REASONS",
    "WAITING_AFTER_SECONDS",
    "ErrorReason",
    "FilterChoices",
    "FlaggedCall",
    "JudgeHealth",
    "ProviderOutage",
    "RunErrors",
    "RunFlags",
    "RunProgress",
    "RunWaiting",
    "attempt_rows",
    "call_rows",
    "can_resume",
    "eta_text",
    "judge_health",
    "latest_prompt_template",
    "prompt_versions",
    "provider_outages",
    "recent_runs",
    "run_errors",
    "run_filter_choices",
    "run_flags",
    "run_progress",
    "run_status",
    "run_waiting",
    "study_run",
    "truncated_calls",
]
