"""What the panel's suggestions do to the taxonomy: the Delphi rules, with no Django import.

`apply_suggestions` (plan) turns a round's items and accepted suggestions into the next
round; `removed_identities`, `removed_ancestor` and `removed_with_branches` (removals) say
what a delete or merge took out; `check_suggestion` (checks) says whether a panelist's
suggestion makes sense; `describe_suggestion` and `suggestion_change` (wording) put one in words.
"""

from delphi.suggestions.checks import PARENT_KIND, CheckedSuggestion, check_suggestion
from delphi.suggestions.kinds import (
    ACCEPTED,
    ADD,
    DELETE,
    DETAIL_KEYS,
    MERGE,
    MOVE,
    RENAME,
    ItemLike,
    RoundLike,
    SuggestionLike,
)
from delphi.suggestions.plan import Item, Plan, PlannedItem, apply_suggestions
from delphi.suggestions.removals import (
    Removal,
    removed_ancestor,
    removed_identities,
    removed_with_branches,
)
from delphi.suggestions.wording import describe_suggestion, suggestion_change

__all__ = [
    "ACCEPTED",
    "ADD",
    "DELETE",
    "DETAIL_KEYS",
    "MERGE",
    "MOVE",
    "PARENT_KIND",
    "RENAME",
    "CheckedSuggestion",
    "Item",
    "ItemLike",
    "Plan",
    "PlannedItem",
    "Removal",
    "RoundLike",
    "SuggestionLike",
    "apply_suggestions",
    "check_suggestion",
    "describe_suggestion",
    "removed_ancestor",
    "removed_identities",
    "removed_with_branches",
    "suggestion_change",
]
