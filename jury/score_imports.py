"""Importing machine scores from a long file (CSV or JSONL), and exporting them the same way.

Columns: external_id, model, kind ("judge" or "metric"), scorer (the judge's or metric's
name), criterion, value, and optionally comment. A judge verdict is one line per item and
criterion, under a named judge (a judge not known to the site is created as an imported
one); a metric is any automatic metric under its own name, on the criterion "overall" (or
none), written "name@scorer model" to name the model that computed it.

All or nothing like the ratings import (annotation.services.rating_imports), and read the
same way, line by line: every bad line is reported with its line, column and reason (the
first ones in memory, all of them in a job's error file); a score stored already with the same value is
unchanged; a different value refuses the import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation import audit
from annotation.errors import LongFileRefused
from annotation.imports.longchecks import ITEM_ALIASES, StudyIndex, scale_value, text_cell
from annotation.imports.longerrors import LineErrors
from annotation.imports.longfile import LineCallback, LineError, LongRecord, long_records
from annotation.locking import refuse_if_locked
from annotation.models import RatingStudy
from annotation.services import LongImportSummary, file_digest
from jury.errors import JuryError
from jury.models import Judge, JudgeScore, MetricScore

SCORE_COLUMNS = ("external_id", "model", "kind", "scorer", "value")
SCORE_OPTIONAL = ("criterion", "comment")
SCORE_ALIASES = {**ITEM_ALIASES, "name": "scorer", "judge": "scorer", "explanation": "comment"}
LONG_SCORE_COLUMNS = ["external_id", "model", "kind", "scorer", "criterion", "value", "comment"]
JUDGE, METRIC = "judge", "metric"
#: The criterion of a metric: it scores the whole output (agreement.selectors uses the same).
METRIC_CRITERION = "overall"
JUDGE_NAME_MAX = Judge._meta.get_field("name").max_length
METRIC_NAME_MAX = MetricScore._meta.get_field("metric").max_length
SCORER_MODEL_MAX = MetricScore._meta.get_field("scorer_model").max_length


@dataclass(frozen=True, slots=True)
class _Score:
    line: int
    kind: str
    item_id: int
    scorer: str  # judge name, or metric name
    scorer_model: str  # metrics only
    criterion_id: int | None  # judges only
    value: float
    comment: str

    @property
    def key(self) -> tuple:
        return (self.kind, self.item_id, self.scorer, self.scorer_model, self.criterion_id)


def import_scores(
    *,
    study: RatingStudy,
    data: bytes | IO[bytes],
    name: str,
    actor: AbstractBaseUser | None,
    errors: LineErrors | None = None,
    on_line: LineCallback | None = None,
) -> LongImportSummary:
    """Import the judge verdicts and metric scores of a long file (bytes, or a seekable
    binary stream read line by line) into `study`; raise LongFileRefused with the first
    errors and their count (all of them go to `errors`), or JuryError for a locked study. The
    lines are checked outside any
    transaction; the save checks the stored scores again, in one transaction."""
    errors = LineErrors() if errors is None else errors
    refuse_if_locked(study=study, error=JuryError, what="scores")
    index = StudyIndex.of(study)
    stored = _stored(study)
    file_format, records = long_records(
        data,
        name=name,
        required=SCORE_COLUMNS,
        optional=SCORE_OPTIONAL,
        aliases=SCORE_ALIASES,
        errors=errors,
        on_line=on_line,
    )
    first_line: dict[tuple, int] = {}
    scores: list[_Score] = []
    n_records = 0
    for record in records:
        n_records += 1
        line_errors: list[LineError] = []
        score = _check_line(record, index, first_line, line_errors)
        if score is not None:
            _against_stored([score], stored, line_errors)
        if line_errors:
            errors.extend(line_errors)
        elif score is not None:
            scores.append(score)
    if errors:
        raise LongFileRefused(errors.first, count=errors.count, noun="scores")
    with transaction.atomic():
        study = RatingStudy.objects.select_for_update().get(pk=study.pk)
        refuse_if_locked(study=study, error=JuryError, what="scores")
        late: list[LineError] = []  # scores stored since the lines were read
        new, unchanged = _against_stored(scores, _stored(study), late)
        if late:
            errors.extend(late)
            raise LongFileRefused(errors.first, count=errors.count, noun="scores")
        judges = {
            j.name: j
            for j in Judge.objects.filter(name__in={s.scorer for s in scores if s.kind == JUDGE})
        }
        new_names = sorted({s.scorer for s in scores if s.kind == JUDGE} - set(judges))
        for judge_name in new_names:
            judges[judge_name] = Judge.objects.create(
                name=judge_name,
                provider=Judge.Provider.IMPORTED,
                model_id=judge_name,
                description="Verdicts imported from a scores file.",
            )
        JudgeScore.objects.bulk_create(
            (
                JudgeScore(
                    item_id=s.item_id,
                    judge=judges[s.scorer],
                    criterion_id=s.criterion_id,
                    value=s.value,
                    explanation=s.comment,
                    flags=[],
                )
                for s in new
                if s.kind == JUDGE
            ),
            batch_size=2000,
        )
        MetricScore.objects.bulk_create(
            (
                MetricScore(
                    item_id=s.item_id,
                    metric=s.scorer,
                    scorer_model=s.scorer_model,
                    value=s.value,
                    params={"imported": True},
                )
                for s in new
                if s.kind == METRIC
            ),
            batch_size=2000,
        )
        summary = LongImportSummary(
            file_format=file_format,
            lines=n_records,
            created=len(new),
            unchanged=unchanged,
            new_names=new_names,
            names=sorted({_label(s) for s in scores}),
        )
        if new:
            audit.record(
                actor=actor,
                action="scores.import",
                target=study,
                study=study,
                after={"file": name, "sha256": file_digest(data), **summary.as_dict()},
            )
    return summary


def _label(score: _Score) -> str:
    name = f"{score.scorer}@{score.scorer_model}" if score.scorer_model else score.scorer
    return f"{score.kind}:{name}"


def _check_line(
    record: LongRecord, index: StudyIndex, first_line: dict[tuple, int], errors: list[LineError]
) -> _Score | None:
    """The line's score if it is good (and not a repeat); else its problems go to `errors`."""
    kind = record.cells["kind"].strip().lower()
    if kind not in (JUDGE, METRIC):
        reason = f"{record.cells['kind']!r} is not a kind of score; write judge or metric"
        errors.append(LineError(record.line, "kind", reason))
    item_id = index.item(record, errors)
    if kind == JUDGE:
        score = _judge_line(record, index, item_id, errors)
    elif kind == METRIC:
        score = _metric_line(record, item_id, errors)
    else:
        score = None
    if score is None or errors:
        return None
    if score.key in first_line:
        reason = f"the same score appears twice (first at line {first_line[score.key]})"
        errors.append(LineError(record.line, "scorer", reason))
        return None
    first_line[score.key] = record.line
    return score


def _judge_line(
    record: LongRecord, index: StudyIndex, item_id: int | None, errors: list[LineError]
) -> _Score | None:
    name = text_cell(record, "scorer", errors, max_length=JUDGE_NAME_MAX)
    if not record.cells["criterion"].strip():
        errors.append(LineError(record.line, "criterion", "a judge verdict needs a criterion"))
        return None
    criterion = index.criterion(record, errors)
    # A judge's verdict on the criterion's scale; the jury's means are not whole anyway.
    value = scale_value(record, criterion, errors, decimals=True)
    comment = record.cells["comment"]
    if name is None or item_id is None or criterion is None or value is None:
        return None
    return _Score(record.line, JUDGE, item_id, name, "", criterion.pk, value, comment)


def _metric_line(record: LongRecord, item_id: int | None, errors: list[LineError]) -> _Score | None:
    criterion = record.cells["criterion"].strip()
    if criterion not in ("", METRIC_CRITERION):
        reason = f"a metric scores the whole output: leave it empty or write {METRIC_CRITERION!r}"
        errors.append(LineError(record.line, "criterion", reason))
    label = text_cell(record, "scorer", errors, max_length=METRIC_NAME_MAX + SCORER_MODEL_MAX + 1)
    value = scale_value(record, None, errors)
    if label is None:
        return None
    name, _at, scorer_model = label.partition("@")
    name, scorer_model = name.strip(), scorer_model.strip()
    if not name:
        errors.append(LineError(record.line, "scorer", "the metric needs a name before '@'"))
        return None
    if len(name) > METRIC_NAME_MAX:
        reason = f"the metric name is {len(name)} characters long; at most {METRIC_NAME_MAX}"
        errors.append(LineError(record.line, "scorer", reason))
        return None
    if item_id is None or value is None:
        return None
    return _Score(record.line, METRIC, item_id, name, scorer_model, None, value, "")


def _stored(study: RatingStudy) -> dict[tuple, float]:
    """The study's machine scores by _Score.key: a judge's stored value is its latest valid
    score (the one the score table reads), from a call or imported."""
    judged: dict[tuple, float] = {}
    for item_id, name, criterion_id, value in (
        JudgeScore.objects.filter(item__study=study, is_valid=True, value__isnull=False)
        .order_by("pk")
        .values_list("item_id", "judge__name", "criterion_id", "value")
    ):
        judged[(JUDGE, item_id, name, "", criterion_id)] = value
    for item_id, metric, scorer_model, value in MetricScore.objects.filter(
        item__study=study
    ).values_list("item_id", "metric", "scorer_model", "value"):
        judged[(METRIC, item_id, metric, scorer_model, None)] = value
    return judged


def _against_stored(
    scores: list[_Score], stored: dict[tuple, float], errors: list[LineError]
) -> tuple[list[_Score], int]:
    """(scores to create, how many are stored already with that value); conflicts go to
    `errors`."""
    new: list[_Score] = []
    unchanged = 0
    for score in scores:
        value = stored.get(score.key)
        if value is None:
            new.append(score)
        elif value == score.value:
            unchanged += 1
        else:
            reason = (
                f"conflicts with the stored {score.kind} score {value:g} of {score.scorer!r} "
                "on this item; an import never changes a stored score"
            )
            errors.append(LineError(score.line, "value", reason))
    return new, unchanged


def scores_long_rows(*, study: RatingStudy) -> list[dict[str, Any]]:
    """The machine scores the score table uses, in the import's long format: each judge's
    latest valid score per item and criterion (from a call or imported) and every metric
    score, as "name@scorer model" where it names its scorer model (the score table shows
    the model only where one metric has several, and reads these back the same). The jury is not
    a row: it is derived from the judges. Two queries."""
    latest: dict[tuple[int, int, int], tuple] = {}
    for row in (
        JudgeScore.objects.filter(item__study=study, is_valid=True, value__isnull=False)
        .order_by("pk")
        .values_list(
            "item_id",
            "judge_id",
            "criterion_id",
            "item__external_id",
            "item__model_name",
            "judge__name",
            "criterion__position",
            "criterion__key",
            "value",
            "explanation",
        )
    ):
        latest[row[:3]] = row[3:]
    rows: list[tuple[tuple, dict[str, Any]]] = []
    for (item_id, _judge, _criterion), (ext, model, name, pos, key, value, expl) in latest.items():
        row = {"external_id": ext, "model": model, "kind": JUDGE, "scorer": name}
        shown = int(value) if float(value).is_integer() else value  # "4", not "4.0"
        row |= {"criterion": key, "value": shown, "comment": expl}
        rows.append(((item_id, 0, name, pos), row))
    metrics = MetricScore.objects.filter(item__study=study).values_list(
        "item_id", "item__external_id", "item__model_name", "metric", "scorer_model", "value"
    )
    for item_id, ext, model, metric, scorer_model, value in metrics:
        label = f"{metric}@{scorer_model}" if scorer_model else metric
        row = {"external_id": ext, "model": model, "kind": METRIC, "scorer": label}
        row |= {"criterion": METRIC_CRITERION, "value": value, "comment": ""}
        rows.append(((item_id, 1, label, 0), row))
    rows.sort(key=lambda pair: pair[0])
    return [row for _key, row in rows]
