"""What a Delphi study asks its panel, and the protocol document that locking freezes.

The questions JSON (DelphiStudy.questions) and the protocol document are plain data: this
module validates and canonicalises them, hashes the document, and has no Django import, so
reports and tests can check a stored hash against the document they show.

Questions JSON
--------------
    {"rate_kinds": ["category", "subcategory", "task"],   which nodes are rated 1-9
     "allow_unable_to_rate": true,                         offer "unable to rate"
     "placement": "none" | "agree" | "choose",             per subcategory and task:
                                                           "agree": does it belong under its
                                                           parent?; "choose": pick the
                                                           category (as MedHELM asked)
     "comments": true,                                     a free-text comment on wording
     "comprehensiveness": true}                            the whole taxonomy, 1-5, per round
Keys left out take the defaults shown in DEFAULT_QUESTIONS.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from delphi.errors import DelphiError

NODE_KINDS = ("category", "subcategory", "task")
PLACEMENT_MODES = ("none", "agree", "choose")

DEFAULT_QUESTIONS: dict[str, Any] = {
    "rate_kinds": list(NODE_KINDS),
    "allow_unable_to_rate": True,
    "placement": "agree",
    "comments": True,
    "comprehensiveness": True,
}

# The importance scale and its RAND/UCLA bands, as shown to panelists and written in reports.
SCALE = {
    "points": list(range(1, 10)),
    "bands": {
        "1-3": "not important / inappropriate",
        "4-6": "uncertain",
        "7-9": "important / appropriate",
    },
    "question": "How important is it that this belongs in the taxonomy?",
}

PROTOCOL_FORMAT = "medhelm-studio delphi protocol v1"


def validate_questions(data: Any) -> dict[str, Any]:
    """The questions with defaults filled in; DelphiError naming the bad key otherwise."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise _invalid(f"questions must be a JSON object, got {type(data).__name__}")
    unknown = set(data) - set(DEFAULT_QUESTIONS)
    if unknown:
        raise _invalid(
            f"questions: unknown key(s) {sorted(unknown)}; allowed: {sorted(DEFAULT_QUESTIONS)}"
        )
    questions = {**DEFAULT_QUESTIONS, **data}
    kinds = questions["rate_kinds"]
    if (
        not isinstance(kinds, list)
        or not kinds
        or any(kind not in NODE_KINDS for kind in kinds)
        or len(set(kinds)) != len(kinds)
    ):
        raise _invalid(
            f"questions at rate_kinds: must be a non-empty list of distinct {list(NODE_KINDS)}, "
            f"got {kinds!r}"
        )
    questions["rate_kinds"] = [kind for kind in NODE_KINDS if kind in kinds]
    if questions["placement"] not in PLACEMENT_MODES:
        raise _invalid(
            f"questions at placement: must be one of {list(PLACEMENT_MODES)}, "
            f"got {questions['placement']!r}"
        )
    for key in ("allow_unable_to_rate", "comments", "comprehensiveness"):
        if not isinstance(questions[key], bool):
            raise _invalid(f"questions at {key}: must be true or false, got {questions[key]!r}")
    return questions


def canonical_json(document: Mapping[str, Any]) -> str:
    """Sorted keys, no insignificant whitespace, UTF-8 text: the form that is hashed."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def protocol_hash(document: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of a protocol document."""
    return hashlib.sha256(canonical_json(document).encode("utf-8")).hexdigest()


def build_protocol_document(
    *,
    title: str,
    aims: str,
    taxonomy: Mapping[str, Any],
    questions: Mapping[str, Any],
    consensus_rule: Mapping[str, Any],
    carry_over: str,
    stopping_rule: Mapping[str, Any],
    ask_reason_outside_iqr: bool,
    quantile_method: str,
    min_group_raters: int,
) -> dict[str, Any]:
    """The protocol as locked: everything that decides how answers become consensus.

    The panel is not part of it: invitations may go out after locking, and the panel is
    reported separately (flow of panelists per round).
    """
    return {
        "format": PROTOCOL_FORMAT,
        "title": title,
        "aims": aims,
        "taxonomy_draft": dict(taxonomy),
        "questions": dict(questions),
        "scale": SCALE,
        "consensus_rule": dict(consensus_rule),
        "carry_over": carry_over,
        "stopping_rule": dict(stopping_rule),
        "ask_reason_outside_iqr": ask_reason_outside_iqr,
        "statistics": {
            "quantile_method": quantile_method,
            "min_group_raters": min_group_raters,
        },
    }


def _invalid(message: str) -> DelphiError:
    return DelphiError(message, field="questions")
