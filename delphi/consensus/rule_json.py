"""Consensus rules as JSON (DelphiStudy.consensus_rule, hashed when the protocol locks).

    Rule      = {"preset": <name>, "min_n": int >= 1, <thresholds of that preset>}
              | {"op": "and" | "or", "rules": [Rule, ...], "min_n": int >= 1}

Thresholds left out take the preset's defaults; `rule_to_dict` writes every one out, so a
stored rule does not depend on this code's defaults (`rule_from_dict(rule_to_dict(r)) == r`).
A bad rule raises RuleError naming its place, e.g. "consensus rule at rule.rules[1].iqr_at_most".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from delphi.consensus.rules import (
    PRESET_THRESHOLDS,
    PRESETS,
    CombinedRule,
    ConsensusRule,
    RuleError,
)


def rule_to_dict(rule: ConsensusRule) -> dict[str, Any]:
    """The plain JSON dict of a rule, every threshold and min_n written out."""
    if isinstance(rule, CombinedRule):
        return {
            "op": rule.op,
            "min_n": rule.min_n,
            "rules": [rule_to_dict(child) for child in rule.rules],
        }
    data: dict[str, Any] = {"preset": rule.preset, "min_n": rule.min_n}
    for key in PRESET_THRESHOLDS[rule.preset]:
        data[key] = getattr(rule, key)
    return data


def rule_from_dict(data: Any) -> ConsensusRule:
    """Parse and validate a rule dict; RuleError names the bad key or value and where it is."""
    return _parse_rule(data, "rule")


def describe_rule(data: Any) -> str:
    """A stored rule in words; one that no longer parses says so and why."""
    try:
        return rule_from_dict(data).describe()
    except RuleError as error:
        return f"(invalid rule: {error})"


def validate_rule(data: Any) -> dict[str, Any]:
    """The normalised dict (defaults written out) of a valid rule; RuleError otherwise."""
    return rule_to_dict(rule_from_dict(data))


def _parse_rule(data: Any, path: str) -> ConsensusRule:
    if not isinstance(data, Mapping):
        _fail(path, f"must be a JSON object, got {type(data).__name__}")
    if ("op" in data) == ("preset" in data):
        _fail(path, 'needs exactly one of "op" (a combination) or "preset" (a single rule)')
    if "op" in data:
        _no_unknown_keys(data, {"op", "rules", "min_n"}, path)
        rules = data.get("rules")
        if not isinstance(rules, list) or not rules:
            _fail(f"{path}.rules", f"must be a non-empty list of rules, got {rules!r}")
        children = tuple(_parse_rule(child, f"{path}.rules[{i}]") for i, child in enumerate(rules))
        arguments: dict[str, Any] = {"op": data["op"], "rules": children}
        cls: type[ConsensusRule] = CombinedRule
    else:
        name = data["preset"]
        if not isinstance(name, str) or name not in PRESETS:
            _fail(f"{path}.preset", f"unknown preset {name!r}; known presets: {sorted(PRESETS)}")
        thresholds = PRESET_THRESHOLDS[name]
        _no_unknown_keys(data, {"preset", "min_n", *thresholds}, path)
        arguments = {key: data[key] for key in thresholds if key in data}
        cls = PRESETS[name]
    if "min_n" in data:
        arguments["min_n"] = data["min_n"]
    try:
        return cls(**arguments)
    except RuleError as error:
        # The dataclass names the key inside its own rule; put it at its place in the tree.
        raise RuleError(path + error.where.removeprefix("rule"), error.problem) from None


def _no_unknown_keys(data: Mapping[str, Any], allowed: set[str], path: str) -> None:
    for key in data:
        if key not in allowed:
            _fail(f"{path}.{key}", f"unknown key {key!r}; allowed here: {sorted(allowed)}")


def _fail(path: str, problem: str) -> NoReturn:
    raise RuleError(path, problem)
