"""Writes for rating studies, one module per sub-domain: studies (set-up, settings, lock),
membership, items, assignment and ratings.

Every function takes keyword-only arguments, runs in one transaction and writes an audit row
for each user-facing change. Callers use `from annotation import services; services.x(...)`.
"""

from annotation.services.assignment import assign_items
from annotation.services.calibration import (
    advance_calibration,
    mark_calibration_item,
    unmark_calibration_item,
)
from annotation.services.checks import mark_attention_check, unmark_attention_check
from annotation.services.flags import resolve_flag
from annotation.services.items import ItemRow, ItemsCreated, create_items
from annotation.services.membership import PSEUDONYM_PREFIX, add_member, remove_member
from annotation.services.rating_imports import (
    LongImportSummary,
    file_digest,
    import_ratings,
)
from annotation.services.ratings import (
    CriterionAnswer,
    Submitted,
    flag_assignment,
    save_draft,
    submit_answers,
    submit_assignment,
)
from annotation.services.sampling import draw_sample, new_seed, plan_draw
from annotation.services.studies import (
    CRITERION_FIELDS,
    MEDHELM_RUBRIC_FIXTURE,
    STUDY_SETTINGS,
    create_study,
    ensure_medhelm_rubric_template,
    set_study_lock,
    update_study,
    validate_criteria,
)
from annotation.services.watch import (
    record_watch_failure,
    record_watch_snapshot,
    request_watch_refresh,
    start_watch_refresh,
)

__all__ = [
    "CRITERION_FIELDS",
    "MEDHELM_RUBRIC_FIXTURE",
    "PSEUDONYM_PREFIX",
    "STUDY_SETTINGS",
    "CriterionAnswer",
    "ItemRow",
    "ItemsCreated",
    "LongImportSummary",
    "Submitted",
    "add_member",
    "advance_calibration",
    "assign_items",
    "create_items",
    "create_study",
    "draw_sample",
    "ensure_medhelm_rubric_template",
    "file_digest",
    "flag_assignment",
    "import_ratings",
    "mark_attention_check",
    "mark_calibration_item",
    "new_seed",
    "plan_draw",
    "record_watch_failure",
    "record_watch_snapshot",
    "remove_member",
    "request_watch_refresh",
    "resolve_flag",
    "save_draft",
    "set_study_lock",
    "start_watch_refresh",
    "submit_answers",
    "submit_assignment",
    "unmark_attention_check",
    "unmark_calibration_item",
    "update_study",
    "validate_criteria",
]
