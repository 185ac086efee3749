"""Consensus rules for Delphi items (rules, rule_json) and the stopping rule of a study
(stopping). Pure Python; no Django import."""

from delphi.consensus.compare import FLOAT_TOLERANCE
from delphi.consensus.rule_json import (
    describe_rule,
    rule_from_dict,
    rule_to_dict,
    validate_rule,
)
from delphi.consensus.rules import (
    OUTCOME_COLOURS,
    OUTCOME_ORDER,
    PRESETS,
    RESOLVED_OUTCOMES,
    CombinedRule,
    Comet7015,
    ConsensusRule,
    ItemSummary,
    MedianIqr,
    Outcome,
    PercentAgreement,
    PresetRule,
    RandUcla,
    RuleError,
    combine_outcomes,
    evaluate_consensus,
)
from delphi.consensus.stopping import (
    RoundOutcomes,
    StoppingDecision,
    evaluate_stopping_rule,
    validate_stopping_rule,
)

__all__ = [
    "FLOAT_TOLERANCE",
    "OUTCOME_COLOURS",
    "OUTCOME_ORDER",
    "PRESETS",
    "RESOLVED_OUTCOMES",
    "CombinedRule",
    "Comet7015",
    "ConsensusRule",
    "ItemSummary",
    "MedianIqr",
    "Outcome",
    "PercentAgreement",
    "PresetRule",
    "RandUcla",
    "RoundOutcomes",
    "RuleError",
    "StoppingDecision",
    "combine_outcomes",
    "describe_rule",
    "evaluate_consensus",
    "evaluate_stopping_rule",
    "rule_from_dict",
    "rule_to_dict",
    "validate_rule",
    "validate_stopping_rule",
]
