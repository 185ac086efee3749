"""Reads for rating studies, one module per sub-domain: studies (roles, progress), members,
the clinician's queue, the dashboard and the ratings export.

Callers use `from annotation import selectors; selectors.x(...)`.
"""

from annotation.selectors.dashboard import (
    ClinicianProgress,
    FlaggedItem,
    ShortItem,
    WatchSnapshot,
    agreement_watch,
    flagged_items,
    items_short_of_k,
    median_seconds_per_item,
    progress_by_clinician,
)
from annotation.selectors.exports import (
    EXPORT_COLUMNS,
    LONG_RATING_COLUMNS,
    ValueChoice,
    rating_export_rows,
    ratings_long_rows,
)
from annotation.selectors.hot_path import (
    StoredAnswer,
    locked_assignment,
    rater_assignment,
    resume_target,
    rubric_answers,
)
from annotation.selectors.items import (
    FlagEvent,
    ItemAssignment,
    ItemReview,
    item_review,
    study_item,
)
from annotation.selectors.members import (
    account_by_username,
    account_named,
    role_clashes,
    study_member,
    study_members,
)
from annotation.selectors.queue import (
    CaseCopy,
    QueuePosition,
    QueueProgress,
    RaterItem,
    case_copy,
    clinician_progress,
    clinician_queue,
    queue_position,
    rater_item,
)
from annotation.selectors.studies import (
    Role,
    StudyProgress,
    roles_in_study,
    studies_for,
    studies_with_any_role,
    study_items,
    study_progress,
    study_with_roles,
)
from annotation.selectors.taxonomy import task_names_for, taxonomy_node_for

__all__ = [
    "EXPORT_COLUMNS",
    "LONG_RATING_COLUMNS",
    "CaseCopy",
    "ClinicianProgress",
    "FlagEvent",
    "FlaggedItem",
    "ItemAssignment",
    "ItemReview",
    "QueuePosition",
    "QueueProgress",
    "RaterItem",
    "Role",
    "ShortItem",
    "StoredAnswer",
    "StudyProgress",
    "ValueChoice",
    "WatchSnapshot",
    "account_by_username",
    "account_named",
    "agreement_watch",
    "case_copy",
    "clinician_progress",
    "clinician_queue",
    "flagged_items",
    "item_review",
    "items_short_of_k",
    "locked_assignment",
    "median_seconds_per_item",
    "progress_by_clinician",
    "queue_position",
    "rater_assignment",
    "rater_item",
    "rating_export_rows",
    "ratings_long_rows",
    "resume_target",
    "role_clashes",
    "roles_in_study",
    "rubric_answers",
    "studies_for",
    "studies_with_any_role",
    "study_item",
    "study_items",
    "study_member",
    "study_members",
    "study_progress",
    "study_with_roles",
    "task_names_for",
    "taxonomy_node_for",
]
