"""Reading the MedHELM jury's verdicts out of a HELM run's request states.

A verdict sits at request_states[i].annotations.<scenario>.<judge>.<criterion> =
{"score": ..., "explanation": ...}. A judge is a key whose value holds at least one such
criterion object; everything else (prompt_text, other annotators, extra keys a judge wrote)
is ignored. Criteria outside the study's rubric are counted, not read. A judged state (a
prompt was sent, or some judge answered) lacking a judge the scenario has elsewhere in the
run counts as missing for that judge; a state the jury never saw counts as not judged.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from annotation.imports import ParsedImport, ParsedRow, RowError
from annotation.models import Item, RatingStudy, RubricCriterion
from jury.helm_verdicts.report import JUDGE_PREFIX, HelmVerdictReport, Score, ScoreState
from medhelm_site.common.querying import ID_FILTER_LIMIT


def collect(
    *, states: list[Any], parsed: ParsedImport, study: RatingStudy, report: HelmVerdictReport
) -> list[Score]:
    """Every verdict of the run on the study's items, as Scores; fills the report's counts.

    `parsed` holds the run's item rows (helm_rows), whose order is the request state's index.
    """
    reader = _VerdictReader(
        rows={row.order: row for row in parsed.rows},
        item_ids=_study_items(study=study, keys={row.key for row in parsed.rows}),
        rubric={c.key: c for c in RubricCriterion.objects.filter(study=study)},
        expected=_expected_judges(states),
        parsed=parsed,
        report=report,
    )
    for index, state in enumerate(states):
        reader.read_state(index, state)
    reader.finish()
    return reader.scores


def judge_keys(scenario: Mapping[str, Any]) -> list[str]:
    """The keys of a scenario's annotation that are judges: objects holding a criterion."""
    return [
        key
        for key, value in scenario.items()
        if isinstance(key, str)
        and key.strip()
        and isinstance(value, dict)
        and any(_is_criterion(v) for v in value.values())
    ]


def score_value(raw: Any, criterion: RubricCriterion) -> tuple[float | None, bool, str]:
    """(value to store, is it valid, why not) for one raw score.

    Valid is a JSON integer within the criterion's scale (4.0 counts as 4, as in
    jury.verdicts). Otherwise a number is kept as given, never clamped or rounded, and
    anything else is stored as null: the judge did not follow the scale.
    """
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        shown = "null" if raw is None else repr(raw)
        return None, False, f"score {shown} is not a number"
    try:
        value = float(raw)
    except OverflowError:
        return None, False, "score is too large to store"
    if not math.isfinite(value):
        return None, False, "score is not a finite number"
    if not value.is_integer():
        return value, False, f"score {raw} is not an integer"
    if not criterion.scale_min <= value <= criterion.scale_max:
        return value, False, f"score {raw} is outside {criterion.scale_min}-{criterion.scale_max}"
    return value, True, ""


def _is_criterion(value: Any) -> bool:
    return isinstance(value, dict) and "score" in value


def _scenarios(state: Any) -> dict[str, dict[str, Any]]:
    annotations = state.get("annotations") if isinstance(state, dict) else None
    if not isinstance(annotations, dict):
        return {}
    return {k: v for k, v in annotations.items() if isinstance(v, dict)}


def _expected_judges(states: list[Any]) -> dict[str, set[str]]:
    """Per scenario, every judge key it has anywhere in the run."""
    expected: dict[str, set[str]] = defaultdict(set)
    for state in states:
        for scenario_key, scenario in _scenarios(state).items():
            expected[scenario_key].update(judge_keys(scenario))
    return expected


def _explanation(raw: Any) -> str:
    # PostgreSQL cannot store NUL in text; a judge's explanation loses them rather than the
    # whole import failing.
    return raw.replace("\x00", "") if isinstance(raw, str) else ""


def _study_items(*, study: RatingStudy, keys: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
    items = Item.objects.filter(study=study)
    if len(keys) <= ID_FILTER_LIMIT:
        items = items.filter(external_id__in={external_id for external_id, _ in keys})
    rows = items.values_list("external_id", "model_name", "pk").order_by()
    return {(e, m): pk for e, m, pk in rows.iterator(chunk_size=2000) if (e, m) in keys}


@dataclass(frozen=True)
class _Target:
    """The item a request state's verdicts are about."""

    index: int
    item_id: int
    label: str


@dataclass
class _VerdictReader:
    rows: dict[int, ParsedRow]
    item_ids: dict[tuple[str, str], int]
    rubric: dict[str, RubricCriterion]
    expected: dict[str, set[str]]
    parsed: ParsedImport
    report: HelmVerdictReport
    scores: list[Score] = field(default_factory=list)
    judges: set[str] = field(default_factory=set)
    missing: Counter[str] = field(default_factory=Counter)
    missing_criteria: Counter[str] = field(default_factory=Counter)
    unknown: Counter[str] = field(default_factory=Counter)

    def read_state(self, index: int, state: Any) -> None:
        scenarios = _scenarios(state)
        row = self.rows.get(index)
        item_id = self.item_ids.get(row.key) if row is not None else None
        if item_id is None:
            if any(judge_keys(s) for s in scenarios.values()):
                reason = self._unmatched_reason(index, row)
                self.report.unmatched.append(RowError(f"request_states[{index}]", reason, index))
            return
        target = _Target(index, item_id, f"{row.external_id!r} (model {row.model_name!r})")
        judged = [self._read_scenario(target, key, s) for key, s in scenarios.items()]
        if not any(judged):
            self.report.not_judged += 1

    def finish(self) -> None:
        self.report.judges = sorted(self.judges)
        self.report.missing = dict(sorted(self.missing.items()))
        self.report.missing_criteria = dict(sorted(self.missing_criteria.items()))
        self.report.unknown_criteria = dict(sorted(self.unknown.items()))

    def _read_scenario(self, target: _Target, scenario_key: str, scenario: dict) -> bool:
        """Read one scenario's verdicts; False when the jury never saw the state (no judge
        answered and no prompt was sent: an empty completion)."""
        present = judge_keys(scenario)
        if not present and scenario.get("prompt_text") is None:
            return False
        for judge_key in sorted(self.expected[scenario_key] - set(present)):
            self.missing[JUDGE_PREFIX + judge_key] += 1
        for judge_key in present:
            self.judges.add(JUDGE_PREFIX + judge_key)
            where = f"request_states[{target.index}].annotations.{scenario_key}.{judge_key}"
            self._read_verdict(target, where, judge_key, scenario[judge_key])
        return True

    def _read_verdict(
        self, target: _Target, where: str, judge_key: str, verdict: dict[str, Any]
    ) -> None:
        for criterion_key in self.rubric:
            if criterion_key not in verdict:
                self.missing_criteria[criterion_key] += 1
        for criterion_key, raw in verdict.items():
            criterion = self.rubric.get(criterion_key)
            if criterion is not None:
                spot = f"{where}.{criterion_key}"
                self.scores.append(self._score(target, spot, judge_key, criterion, raw))
            elif _is_criterion(raw):
                self.unknown[str(criterion_key)] += 1

    def _score(
        self, target: _Target, where: str, judge_key: str, criterion: RubricCriterion, raw: Any
    ) -> Score:
        """A rubric criterion's verdict; one that is not a criterion object is invalid."""
        state: ScoreState
        if _is_criterion(raw):
            value, is_valid, why = score_value(raw["score"], criterion)
            state = (value, is_valid, _explanation(raw.get("explanation")))
        else:
            state, why = (None, False, ""), "not an object with a score"
        if not state[1]:
            self.report.invalid.append(RowError(where, f"{why}; stored as invalid", target.index))
        return Score(
            where=where,
            order=target.index,
            item_id=target.item_id,
            item_label=target.label,
            judge_key=judge_key,
            criterion=criterion,
            value=state[0],
            is_valid=state[1],
            explanation=state[2],
        )

    def _unmatched_reason(self, index: int, row: ParsedRow | None) -> str:
        if row is not None:
            return (
                f"no item {row.external_id!r} with model {row.model_name!r} in this study; "
                "its verdicts are skipped"
            )
        # Why the item import made no item of this state, in its own words.
        reasons = [e.reason for e in self.parsed.errors if e.order == index] + [
            w.reason
            for w in self.parsed.warnings
            if w.order == index and w.where.endswith(f"[{index}]")
        ]
        if reasons:
            return "not an item of this run (" + "; ".join(reasons) + "); its verdicts are skipped"
        return (
            "not an item of this run (a later train trial or a perturbed instance); "
            "its verdicts are skipped"
        )
