"""The protocol of a Delphi study: the locked document with its hash (protocol.json) and
every setting in words (`ProtocolText`), which the report prints and the checklist quotes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from delphi import consensus, protocol, stats
from delphi.errors import DelphiError
from delphi.exports.data import StudyData
from delphi.models import DelphiStudy

CARRY_OVER_WORDS = {
    DelphiStudy.CarryOver.DROP_RESOLVED: "items that reached consensus (in or out) are not "
    "rated again; items without consensus, and every item a triaged suggestion changed, go "
    "to the next round",
    DelphiStudy.CarryOver.RERATE_ALL: "every item is rated again in every round, whatever its "
    "outcome; items a triaged suggestion changed go to the next round as a new version",
}
PLACEMENT_WORDS = {
    "none": "placement under a parent is not asked",
    "agree": "for each subcategory and task, whether it belongs under its parent (yes / no)",
    "choose": "for each subcategory, which category it belongs under",
}


@dataclass(frozen=True)
class ProtocolText:
    """Every locked setting in words, one sentence each."""

    aims: str
    draft_taxonomy: str
    questions: str
    scale: str
    consensus_rule: str
    carry_over: str
    stopping_rule: str
    reason_outside_iqr: str
    quantile_method: str
    group_statistics: str

    def rows(self) -> list[tuple[str, str]]:
        """(setting, in words), as the report lists them."""
        return [
            ("Aims", self.aims),
            ("Draft taxonomy", self.draft_taxonomy),
            ("Questions", self.questions),
            ("Scale", self.scale),
            ("Consensus rule (defined before round 1)", self.consensus_rule),
            ("Carry-over between rounds", self.carry_over),
            ("Stopping rule", self.stopping_rule),
            ("Reason for a rating outside the IQR", self.reason_outside_iqr),
            ("Quantile method (Q1, Q3, P30, P70)", self.quantile_method),
            ("Group statistics", self.group_statistics),
        ]


def protocol_text(data: StudyData) -> ProtocolText:
    """The settings in words: from the locked document when there is one, else from the study
    as it stands (and the report says it is not locked)."""
    settings = _settings(data)
    return ProtocolText(
        aims=settings["aims"] or "(none given)",
        draft_taxonomy=str(settings["taxonomy"].get("name", "")) or "(unnamed)",
        questions=describe_questions(settings["questions"]),
        scale=describe_scale(),
        consensus_rule=consensus.describe_rule(settings["consensus_rule"]),
        carry_over=CARRY_OVER_WORDS.get(settings["carry_over"], settings["carry_over"]),
        stopping_rule=describe_stopping_rule(settings["stopping_rule"]),
        reason_outside_iqr=(
            "asked from round 2 when a panelist rates outside the panel's interquartile range "
            "of the round before"
            if settings["ask_reason_outside_iqr"]
            else "not asked"
        ),
        quantile_method=stats.describe_quantile_method(data.quantile_method),
        group_statistics=f"per stakeholder group, withheld for a group with fewer than "
        f"{data.min_group_raters} ratings (so no one's rating can be read back)",
    )


def _settings(data: StudyData) -> dict[str, Any]:
    """The raw settings, from the locked document or, before locking, the study."""
    document = data.document
    if document is not None:
        return {
            "aims": document.get("aims", data.study.aims),
            "taxonomy": document.get("taxonomy_draft", {}),
            "questions": document["questions"],
            "consensus_rule": document["consensus_rule"],
            "carry_over": document["carry_over"],
            "stopping_rule": document["stopping_rule"],
            "ask_reason_outside_iqr": document["ask_reason_outside_iqr"],
        }
    study = data.study
    return {
        "aims": study.aims,
        "taxonomy": {"name": study.draft_taxonomy.name},
        "questions": protocol.validate_questions(study.questions),
        "consensus_rule": study.consensus_rule,
        "carry_over": study.carry_over,
        "stopping_rule": study.stopping_rule,
        "ask_reason_outside_iqr": study.ask_reason_outside_iqr,
    }


def describe_stopping_rule(rule: Mapping[str, Any]) -> str:
    """The locked stopping rule in words; its criteria are alternatives."""
    parts = []
    if "max_rounds" in rule:
        parts.append(f"after at most {rule['max_rounds']} rounds")
    if rule.get("all_resolved"):
        parts.append("when every item of the latest round reached consensus (in or out)")
    if "stability" in rule:
        threshold = rule["stability"]["pct_unchanged_at_least"]
        parts.append(
            f"when every unresolved item has at least {threshold:g}% of its paired panelists "
            "unchanged since the round before"
        )
    return "Stop " + ", or ".join(parts) + ", whichever comes first." if parts else "(none)"


def describe_questions(questions: Mapping[str, Any]) -> str:
    plural = {"category": "categories", "subcategory": "subcategories", "task": "tasks"}
    kinds = ", ".join(plural[kind] for kind in questions["rate_kinds"])
    parts = [
        f"Rated items: {kinds}.",
        f"Question: {protocol.SCALE['question']}",
        "'Unable to rate' offered (not counted as a rating)."
        if questions["allow_unable_to_rate"]
        else "'Unable to rate' not offered.",
        f"Placement: {PLACEMENT_WORDS[questions['placement']]}.",
        "A free-text comment per item." if questions["comments"] else "No per-item comment.",
        "Comprehensiveness of the whole taxonomy rated 1-5 once per round."
        if questions["comprehensiveness"]
        else "Comprehensiveness not asked.",
    ]
    return " ".join(parts)


def describe_scale() -> str:
    bands = "; ".join(f"{band} {words}" for band, words in protocol.SCALE["bands"].items())
    return f"1-9 (RAND/UCLA), in three bands: {bands}"


def protocol_export(*, study: DelphiStudy) -> dict[str, Any]:
    """The locked protocol document with its stored hash, whether the hash still matches the
    document, and when it was locked. DelphiError when the protocol is not locked."""
    if study.protocol_document is None or not study.protocol_hash:
        raise DelphiError(
            f"the protocol of study {study.pk} ({study.title!r}) is not locked yet: there is no "
            "frozen protocol to export; lock it first"
        )
    return {
        "study": study.pk,
        "title": study.title,
        "locked_at": _iso(study.protocol_locked_at),
        "protocol_hash": study.protocol_hash,
        "hash_algorithm": "SHA-256 of the canonical JSON of the document "
        "(sorted keys, no insignificant whitespace, UTF-8)",
        # Recomputed here: a document edited after locking shows up as false.
        "hash_matches_document": protocol.protocol_hash(study.protocol_document)
        == study.protocol_hash,
        "document": study.protocol_document,
    }


def _iso(value: datetime | None) -> str:
    return value.isoformat() if value else ""


__all__ = [
    "CARRY_OVER_WORDS",
    "PLACEMENT_WORDS",
    "ProtocolText",
    "describe_questions",
    "describe_scale",
    "describe_stopping_rule",
    "protocol_export",
    "protocol_text",
]
