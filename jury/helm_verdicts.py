"""Importing the MedHELM jury's own verdicts from a HELM run as judge scores.

A MedHELM run keeps each LLM judge's verdict in
`request_states[i].annotations.<scenario>.<judge>.<criterion>` = {"score": ..., "explanation":
...}. import_helm_verdicts stores them as JudgeScore rows (call=None) of judges named
"helm:<judge>" (provider "imported"), on the study's items that the item import made from the
same run, so that HELM's jury can be set beside the study's clinicians without re-running it.

How the run is read:
- Items are found exactly as the item import forms them: annotation.importers.parse_helm_run
  computes (external_id, model) for every request state ("<benchmark>/<instance id>",
  request.model), with the same skip rules (failed requests, later train trials, perturbed
  instances). `name_hint` must be what the item import used (the uploaded file's stem) when
  the source is a bare scenario_state.json, since the benchmark may come from it.
- A judge is a key of the scenario's annotation whose value is an object holding at least one
  criterion object (an object with a "score" key). Everything else is ignored: prompt_text,
  empty_output_equivalence_judgement, other annotators' fields, and extra keys inside a
  verdict (HELM stores the judge's JSON as the judge wrote it).
- A criterion whose key is a rubric criterion of the study is imported; a criterion object
  with another key is counted in unknown_criteria and not saved. A rubric criterion key under
  a judge whose value is not a criterion object is stored invalid (value null).
- A score is valid when it is a JSON integer within the criterion's scale; 4.0 counts as 4
  (as in jury.verdicts). Anything else is stored invalid: a number is kept as given (never
  clamped or rounded), a string, boolean or null is stored as null. HELM's own metric would
  take int() of it; we record that the judge did not follow the scale instead.
- Coverage: judges expected for a request state are the judge keys that the same scenario has
  anywhere in the run. A judged state (a jury prompt was sent, or some judge answered) that
  lacks one counts as missing for that judge. A state the jury never saw (an empty completion:
  prompt_text null and no judge keys) counts in not_judged.

What is saved: all or nothing, in one transaction with the study row locked. An identical
re-import changes nothing (scores "unchanged", no audit row). A different value, validity or
explanation for a score already imported is a conflict: every conflict is reported with where
and why, and nothing is saved. Request states with verdicts but no item in the study are
reported (unmatched) and skipped; they do not stop the import. One AuditEvent
"jury.helm_import" records what was created.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation import audit, importers
from annotation.importers import RowError
from annotation.models import Item, RatingStudy, RubricCriterion
from jury.models import Judge, JudgeScore

JUDGE_PREFIX = "helm:"
AUDIT_ACTION = "jury.helm_import"
MAX_JUDGE_NAME = Judge._meta.get_field("name").max_length
# Above this many items a study's items are read whole instead of filtered by id.
ITEM_FILTER_LIMIT = 1000

HelmSource = str | Path | bytes | IO[bytes]
ScoreKey = tuple[int, str, int]  # (item id, judge name, criterion id)


@dataclass
class HelmVerdictReport:
    """What an import of HELM verdicts found and did. `saved` is True when it committed (even
    if nothing was new); `ok` is False when errors or conflicts stopped it."""

    request_states: int = 0
    judges: list[str] = field(default_factory=list)
    judges_created: list[str] = field(default_factory=list)
    scores_created: int = 0
    unchanged: int = 0
    invalid: list[RowError] = field(default_factory=list)
    missing: dict[str, int] = field(default_factory=dict)
    missing_criteria: dict[str, int] = field(default_factory=dict)
    unknown_criteria: dict[str, int] = field(default_factory=dict)
    unmatched: list[RowError] = field(default_factory=list)
    not_judged: int = 0
    conflicts: list[RowError] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)
    saved: bool = False

    @property
    def ok(self) -> bool:
        return not self.errors and not self.conflicts

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (task results, audit rows, the command's output)."""
        return {
            "ok": self.ok,
            "saved": self.saved,
            "request_states": self.request_states,
            "judges": list(self.judges),
            "judges_created": list(self.judges_created),
            "scores_created": self.scores_created,
            "unchanged": self.unchanged,
            "invalid": len(self.invalid),
            "missing": dict(self.missing),
            "missing_criteria": dict(self.missing_criteria),
            "unknown_criteria": dict(self.unknown_criteria),
            "unmatched": len(self.unmatched),
            "not_judged": self.not_judged,
            "conflicts": [c.as_dict() for c in self.conflicts],
            "errors": [e.as_dict() for e in self.errors],
        }


@dataclass(frozen=True)
class _Score:
    """One verdict read from the run, ready to be stored."""

    where: str
    order: int
    item_id: int
    item_label: str
    judge_key: str
    criterion: RubricCriterion
    value: float | None
    is_valid: bool
    explanation: str

    @property
    def key(self) -> ScoreKey:
        return (self.item_id, JUDGE_PREFIX + self.judge_key, self.criterion.pk)

    @property
    def state(self) -> tuple[float | None, bool, str]:
        return (self.value, self.is_valid, self.explanation)


# --- reading ---------------------------------------------------------------------------------


def _is_criterion(value: Any) -> bool:
    return isinstance(value, dict) and "score" in value


def _judge_keys(scenario: Mapping[str, Any]) -> list[str]:
    return [
        key
        for key, value in scenario.items()
        if isinstance(key, str)
        and key.strip()
        and isinstance(value, dict)
        and any(_is_criterion(v) for v in value.values())
    ]


def _score(raw: Any, criterion: RubricCriterion) -> tuple[float | None, bool, str]:
    """(value to store, is it valid, why not) for one raw score."""
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
        return (
            value,
            False,
            f"score {raw} is outside {criterion.scale_min}-{criterion.scale_max}",
        )
    return value, True, ""


def _explanation(raw: Any) -> str:
    # PostgreSQL cannot store NUL in text; a judge's explanation loses them rather than the
    # whole import failing.
    return raw.replace("\x00", "") if isinstance(raw, str) else ""


def _read_bytes_once(source: HelmSource) -> str | Path | bytes:
    """The source in a form that can be read twice (a stream is read into memory)."""
    if isinstance(source, str | Path | bytes):
        return source
    if isinstance(source, bytearray | memoryview):
        return bytes(source)
    return source.read()


def _request_states(source: str | Path | bytes, name_hint: str) -> list[Any]:
    files = importers._helm_files(source, name_hint)
    if files.scenario_state is None:
        return []
    state, _problem = importers._load_helm_json(files.scenario_state, "scenario_state.json")
    states = state.get("request_states") if isinstance(state, dict) else None
    return states if isinstance(states, list) else []


def _study_items(*, study: RatingStudy, keys: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
    items = Item.objects.filter(study=study)
    if len(keys) <= ITEM_FILTER_LIMIT:
        items = items.filter(external_id__in={external_id for external_id, _ in keys})
    rows = items.values_list("external_id", "model_name", "pk").order_by()
    return {(e, m): pk for e, m, pk in rows.iterator(chunk_size=2000) if (e, m) in keys}


def _unmatched_reason(index: int, parsed: importers.ParsedImport) -> str:
    reasons = [e.reason for e in parsed.errors if e.order == index] + [
        w.reason for w in parsed.warnings if w.order == index and w.where.endswith(f"[{index}]")
    ]
    if reasons:
        return "not an item of this run (" + "; ".join(reasons) + "); its verdicts are skipped"
    return (
        "not an item of this run (a later train trial or a perturbed instance); "
        "its verdicts are skipped"
    )


def _collect(
    *,
    states: list[Any],
    parsed: importers.ParsedImport,
    study: RatingStudy,
    report: HelmVerdictReport,
) -> list[_Score]:
    """Read every verdict of the run into _Score rows; fill the report's counts."""
    rows = {row.order: row for row in parsed.rows}
    item_ids = _study_items(study=study, keys={row.key for row in parsed.rows})
    rubric = {c.key: c for c in RubricCriterion.objects.filter(study=study)}

    # Judges expected per scenario: every judge key the scenario has anywhere in the run.
    expected: dict[str, set[str]] = defaultdict(set)
    for state in states:
        annotations = state.get("annotations") if isinstance(state, dict) else None
        if isinstance(annotations, dict):
            for scenario_key, scenario in annotations.items():
                if isinstance(scenario, dict):
                    expected[scenario_key].update(_judge_keys(scenario))

    scores: list[_Score] = []
    missing: Counter[str] = Counter()
    missing_criteria: Counter[str] = Counter()
    unknown: Counter[str] = Counter()
    judges: set[str] = set()
    for index, state in enumerate(states):
        where = f"request_states[{index}]"
        annotations = state.get("annotations") if isinstance(state, dict) else None
        scenarios = (
            {k: v for k, v in annotations.items() if isinstance(v, dict)}
            if isinstance(annotations, dict)
            else {}
        )
        has_verdicts = any(_judge_keys(s) for s in scenarios.values())
        row = rows.get(index)
        item_id = item_ids.get(row.key) if row is not None else None
        if item_id is None:
            if has_verdicts:
                reason = (
                    f"no item {row.external_id!r} with model {row.model_name!r} in this study; "
                    "its verdicts are skipped"
                    if row is not None
                    else _unmatched_reason(index, parsed)
                )
                report.unmatched.append(RowError(where, reason, index))
            continue
        judged = False
        for scenario_key, scenario in scenarios.items():
            present = _judge_keys(scenario)
            if not present and scenario.get("prompt_text") is None:
                continue  # the jury never saw this state (an empty completion)
            judged = True
            for judge_key in sorted(expected[scenario_key] - set(present)):
                missing[JUDGE_PREFIX + judge_key] += 1
            for judge_key in present:
                judges.add(JUDGE_PREFIX + judge_key)
                verdict = scenario[judge_key]
                for criterion_key in rubric:
                    if criterion_key not in verdict:
                        missing_criteria[criterion_key] += 1
                for criterion_key, raw in verdict.items():
                    spot = f"{where}.annotations.{scenario_key}.{judge_key}.{criterion_key}"
                    criterion = rubric.get(criterion_key)
                    if criterion is None:
                        if _is_criterion(raw):
                            unknown[str(criterion_key)] += 1
                        continue
                    if _is_criterion(raw):
                        value, is_valid, why = _score(raw["score"], criterion)
                        explanation = _explanation(raw.get("explanation"))
                    else:
                        value, is_valid, explanation = None, False, ""
                        why = "not an object with a score"
                    if not is_valid:
                        report.invalid.append(RowError(spot, f"{why}; stored as invalid", index))
                    scores.append(
                        _Score(
                            where=spot,
                            order=index,
                            item_id=item_id,
                            item_label=f"{row.external_id!r} (model {row.model_name!r})",
                            judge_key=judge_key,
                            criterion=criterion,
                            value=value,
                            is_valid=is_valid,
                            explanation=explanation,
                        )
                    )
        if not judged:
            report.not_judged += 1
    report.judges = sorted(judges)
    report.missing = dict(sorted(missing.items()))
    report.missing_criteria = dict(sorted(missing_criteria.items()))
    report.unknown_criteria = dict(sorted(unknown.items()))
    return scores


# --- checking and saving ---------------------------------------------------------------------


def _shown(state: tuple[float | None, bool, str]) -> str:
    value, is_valid, _explanation = state
    number = "null" if value is None else f"{value:g}"
    return f"{number} ({'valid' if is_valid else 'invalid'})"


def _conflict_reason(score: _Score, existing: tuple[float | None, bool, str]) -> str:
    what = f"{JUDGE_PREFIX}{score.judge_key}'s {score.criterion.key} score for {score.item_label}"
    if existing[:2] == score.state[:2]:
        return (
            f"{what} is already imported with a different explanation; "
            "an import never changes an existing score"
        )
    return (
        f"{what} is already imported as {_shown(existing)}, this run says {_shown(score.state)}; "
        "an import never changes an existing score"
    )


def _dedupe(scores: Iterable[_Score], report: HelmVerdictReport) -> list[_Score]:
    """One score per (item, judge, criterion): a repeat with the same verdict is dropped, a
    different one is a conflict (two scenarios or two request states for one item)."""
    first: dict[ScoreKey, _Score] = {}
    for score in scores:
        seen = first.get(score.key)
        if seen is None:
            first[score.key] = score
        elif seen.state != score.state:
            report.conflicts.append(
                RowError(
                    score.where,
                    f"a second verdict of {JUDGE_PREFIX}{score.judge_key} on "
                    f"{score.criterion.key} for {score.item_label} differs from the first "
                    f"({seen.where}): {_shown(seen.state)} vs {_shown(score.state)}",
                    score.order,
                )
            )
    return list(first.values())


def _save(
    *,
    study: RatingStudy,
    scores: list[_Score],
    actor: AbstractBaseUser | None,
    label: str,
    report: HelmVerdictReport,
) -> None:
    """Inside the transaction: check for conflicts, then create judges and scores."""
    names = sorted({JUDGE_PREFIX + s.judge_key for s in scores})
    for name in names:
        if len(name) > MAX_JUDGE_NAME:  # model_id (the bare key) allows more
            report.errors.append(
                RowError("judges", f"judge key {name[len(JUDGE_PREFIX) :]!r} is too long")
            )
    judges = {j.name: j for j in Judge.objects.filter(name__in=names)}
    for name, judge in judges.items():
        if judge.provider != Judge.Provider.IMPORTED:
            report.errors.append(
                RowError(
                    "judges",
                    f"a judge named {name!r} exists with provider {judge.provider!r}; imported "
                    "verdicts need an imported judge (rename the existing judge)",
                )
            )
    if report.errors:
        return
    existing: dict[ScoreKey, tuple[float | None, bool, str]] = {}
    if judges:
        rows = JudgeScore.objects.filter(
            item__study=study, judge__in=judges.values(), call__isnull=True
        ).values_list("item_id", "judge__name", "criterion_id", "value", "is_valid", "explanation")
        for item_id, judge_name, criterion_id, value, is_valid, explanation in rows.iterator(
            chunk_size=2000
        ):
            existing[(item_id, judge_name, criterion_id)] = (value, is_valid, explanation)
    new: list[_Score] = []
    for score in scores:
        current = existing.get(score.key)
        if current is None:
            new.append(score)
        elif current == score.state:
            report.unchanged += 1
        else:
            report.conflicts.append(
                RowError(score.where, _conflict_reason(score, current), score.order)
            )
    if report.conflicts:
        report.unchanged = 0
        return
    for name in sorted({JUDGE_PREFIX + s.judge_key for s in new} - set(judges)):
        judge_key = name[len(JUDGE_PREFIX) :]
        judge, created = Judge.objects.get_or_create(
            name=name,
            defaults={
                "provider": Judge.Provider.IMPORTED,
                "model_id": judge_key,
                "is_active": True,
            },
        )
        if judge.provider != Judge.Provider.IMPORTED:  # made by someone else meanwhile
            report.errors.append(
                RowError("judges", f"a judge named {name!r} exists and is not imported")
            )
            return
        judges[name] = judge
        if created:
            report.judges_created.append(name)
    JudgeScore.objects.bulk_create(
        [
            JudgeScore(
                item_id=s.item_id,
                judge=judges[JUDGE_PREFIX + s.judge_key],
                criterion=s.criterion,
                call=None,
                value=s.value,
                is_valid=s.is_valid,
                explanation=s.explanation,
            )
            for s in new
        ],
        batch_size=1000,
    )
    report.scores_created = len(new)
    if new or report.judges_created:
        audit.record(
            actor=actor,
            action=AUDIT_ACTION,
            target=study,
            study=study,
            after={
                "source": label,
                "judges_created": report.judges_created,
                "scores_created": report.scores_created,
                "unchanged": report.unchanged,
                "invalid": len(report.invalid),
                "missing": report.missing,
                "unknown_criteria": report.unknown_criteria,
                "unmatched": len(report.unmatched),
            },
        )


class _Rollback(Exception):
    pass


def import_helm_verdicts(
    *,
    study: RatingStudy,
    source: HelmSource,
    actor: AbstractBaseUser | None,
    name_hint: str = "",
) -> HelmVerdictReport:
    """Import the jury verdicts of a HELM run (a run directory, a zip of one, or
    scenario_state.json, as a path or bytes) into `study`; see the module docstring.

    Never raises for a problem of the run or the study: the report's errors and conflicts say
    what stopped it (then nothing was saved).
    """
    report = HelmVerdictReport()
    source = _read_bytes_once(source)
    label = str(source) if isinstance(source, str | Path) else (name_hint or "upload")
    parsed = importers.parse_helm_run(source, name_hint=name_hint)
    report.request_states = parsed.total
    fatal = [e for e in parsed.errors if e.order < 0]
    if fatal:
        report.errors.extend(fatal)
        return report
    scores = _collect(
        states=_request_states(source, name_hint), parsed=parsed, study=study, report=report
    )
    scores = _dedupe(scores, report)
    if report.conflicts:
        return report
    try:
        with transaction.atomic():
            locked = RatingStudy.objects.select_for_update().get(pk=study.pk)
            if locked.is_locked:
                report.errors.append(
                    RowError("study", "the study is locked; verdicts can no longer be imported")
                )
                raise _Rollback
            _save(study=locked, scores=scores, actor=actor, label=label, report=report)
            if not report.ok:
                raise _Rollback
    except _Rollback:
        report.judges_created = []
        report.scores_created = 0
        report.conflicts.sort(key=lambda c: c.order)
        return report
    report.saved = True
    return report
