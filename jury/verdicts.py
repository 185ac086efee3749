"""Strict parsing of a judge's verdict into per-criterion scores.

The judge's prompt contains the evaluated output, which may itself look like a verdict or
address the judge; a lenient parser (first JSON object found) would turn a judge that echoed
its input into a perfect score. So:
- the whole reply is one JSON object; whitespace and a single Markdown fence around the whole
  reply are allowed (chat models add one), nothing else outside it;
- its keys are exactly the criteria keys: a missing key invalidates that criterion, an extra
  key every criterion (values still recorded), duplicate keys the reply;
- each value is an object with exactly "score" and a string "explanation";
- a score is an integer within the criterion's scale (4.0 is the integer 4, as in JSON
  Schema); out-of-range and fractional scores are recorded as given, never clamped.
A Verdict is ok only when every criterion is valid.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jury.providers.base import CriterionSpec

# One fenced block spanning the entire (stripped) reply; the body may not contain a fence.
_FENCE = re.compile(r"\A```[ \t]*(?:json)?[ \t]*\r?\n(?P<body>.*?)\r?\n?[ \t]*```\Z", re.I | re.S)


@dataclass(frozen=True)
class CriterionVerdict:
    key: str
    value: int | float | None  # the score as given when numeric, even if invalid
    explanation: str
    valid: bool
    reason: str  # empty when valid


@dataclass(frozen=True)
class Verdict:
    ok: bool
    criteria: tuple[CriterionVerdict, ...]
    reason: str  # empty when ok

    def scores(self) -> dict[str, int]:
        """The valid scores by criterion key."""
        return {c.key: int(c.value) for c in self.criteria if c.valid and c.value is not None}


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(f"duplicate key {key!r}")
        result[key] = value
    return result


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _unwrap(text: str) -> str:
    stripped = text.strip().lstrip("\ufeff").strip()
    match = _FENCE.match(stripped)
    if match and "```" not in match.group("body"):
        return match.group("body").strip()
    return stripped


def _invalid_all(criteria: Sequence[CriterionSpec], reason: str) -> Verdict:
    return Verdict(
        ok=False,
        criteria=tuple(
            CriterionVerdict(key=c.key, value=None, explanation="", valid=False, reason=reason)
            for c in criteria
        ),
        reason=reason,
    )


def _numeric(value: Any) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _criterion(spec: CriterionSpec, raw: Any) -> CriterionVerdict:
    def invalid(reason: str, value: int | float | None = None, explanation: str = ""):
        return CriterionVerdict(
            key=spec.key, value=value, explanation=explanation, valid=False, reason=reason
        )

    if not isinstance(raw, dict):
        return invalid(f"expected an object with score and explanation, got {_short(raw)}")
    score = raw.get("score")
    explanation = raw.get("explanation")
    value = _numeric(score)
    explanation_text = explanation if isinstance(explanation, str) else ""
    keys = set(raw)
    if keys != {"score", "explanation"}:
        problems = []
        if "score" not in keys:
            problems.append("no score")
        if "explanation" not in keys:
            problems.append("no explanation")
        extra = sorted(keys - {"score", "explanation"})
        if extra:
            problems.append(f"unexpected keys {extra}")
        return invalid("; ".join(problems), value, explanation_text)
    if not isinstance(explanation, str):
        return invalid(f"explanation is not a string: {_short(explanation)}", value)
    if value is None:
        return invalid(f"score is not a number: {_short(score)}", None, explanation)
    if isinstance(value, float):
        if not value.is_integer():
            return invalid(f"score {value} is not an integer", value, explanation)
        value = int(value)  # 4.0 is the integer 4 (JSON Schema's definition of integer)
    if not spec.scale_min <= value <= spec.scale_max:
        return invalid(
            f"score {value} outside {spec.scale_min}-{spec.scale_max}", value, explanation
        )
    return CriterionVerdict(
        key=spec.key, value=value, explanation=explanation, valid=True, reason=""
    )


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def parse_verdict(text: str, criteria: Sequence[CriterionSpec]) -> Verdict:
    """The verdict in `text` for these criteria; see the module docstring for the rules."""
    criteria = tuple(criteria)
    body = _unwrap(text or "")
    if not body:
        return _invalid_all(criteria, "empty reply")
    if not body.startswith("{"):
        return _invalid_all(criteria, "reply is not a JSON object")
    try:
        data = json.loads(body, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except _DuplicateKey as exc:
        return _invalid_all(criteria, f"reply is ambiguous JSON: {exc}")
    except ValueError as exc:  # json.JSONDecodeError, including text after the object
        return _invalid_all(criteria, f"reply is not one JSON object: {exc}")
    if not isinstance(data, dict):
        return _invalid_all(criteria, "reply is not a JSON object")

    expected = [c.key for c in criteria]
    extra = sorted(set(data) - set(expected))
    results = []
    for spec in criteria:
        if spec.key not in data:
            results.append(
                CriterionVerdict(
                    key=spec.key,
                    value=None,
                    explanation="",
                    valid=False,
                    reason=f"missing criterion {spec.key!r}",
                )
            )
        else:
            results.append(_criterion(spec, data[spec.key]))
    problems = [f"{r.key}: {r.reason}" for r in results if not r.valid]
    if extra:
        extra_reason = f"unexpected keys {extra}"
        problems.insert(0, extra_reason)
        results = [
            CriterionVerdict(
                key=r.key,
                value=r.value,
                explanation=r.explanation,
                valid=False,
                reason=f"{r.reason}; {extra_reason}" if r.reason else extra_reason,
            )
            for r in results
        ]
    return Verdict(ok=not problems, criteria=tuple(results), reason="; ".join(problems))
