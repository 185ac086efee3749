"""Writes for taxonomies and Delphi studies (services), one module per stage of a study."""

from delphi.errors import DelphiError
from delphi.services.analysis import analyse_round, paired_ratings
from delphi.services.answers import (
    add_suggestion,
    missing_answers,
    parse_answer,
    previous_iqr,
    save_answers,
    submit_round,
)
from delphi.services.next_round import start_next_round
from delphi.services.panel import (
    accept_invitation,
    create_account_and_accept,
    invite_panelist,
    panelist_for_token,
    renew_invitation,
    withdraw_panelist,
)
from delphi.services.release import (
    ReleaseSummary,
    finish_study,
    latest_outcomes,
    node_history,
    release_taxonomy,
    removed_identities,
)
from delphi.services.rounds import (
    close_round,
    open_round,
    release_feedback,
    send_reminders,
    triage_suggestion,
)
from delphi.services.setup import (
    add_coordinator,
    create_delphi_study,
    current_protocol_document,
    lock_protocol,
    set_draft_taxonomy,
    update_protocol,
)
from delphi.services.taxonomy import (
    MEDHELM_BENCHMARKS_FIXTURE,
    MEDHELM_TAXONOMY_FIXTURE,
    TaxonomyFormatError,
    checked_taxonomy_tree,
    create_taxonomy_version,
    ensure_medhelm_taxonomy,
    medhelm_benchmark_nodes,
    parse_taxonomy_file,
    version_tree,
)

__all__ = [
    "MEDHELM_BENCHMARKS_FIXTURE",
    "MEDHELM_TAXONOMY_FIXTURE",
    "DelphiError",
    "ReleaseSummary",
    "TaxonomyFormatError",
    "accept_invitation",
    "add_coordinator",
    "add_suggestion",
    "analyse_round",
    "checked_taxonomy_tree",
    "close_round",
    "create_account_and_accept",
    "create_delphi_study",
    "create_taxonomy_version",
    "current_protocol_document",
    "ensure_medhelm_taxonomy",
    "finish_study",
    "invite_panelist",
    "latest_outcomes",
    "lock_protocol",
    "medhelm_benchmark_nodes",
    "missing_answers",
    "node_history",
    "open_round",
    "paired_ratings",
    "panelist_for_token",
    "parse_answer",
    "parse_taxonomy_file",
    "previous_iqr",
    "release_feedback",
    "release_taxonomy",
    "removed_identities",
    "renew_invitation",
    "save_answers",
    "send_reminders",
    "set_draft_taxonomy",
    "start_next_round",
    "submit_round",
    "triage_suggestion",
    "update_protocol",
    "version_tree",
    "withdraw_panelist",
]
