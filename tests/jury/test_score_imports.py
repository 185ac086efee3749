"""Importing machine scores from a long file: judge verdicts under a named judge, metrics
under any name, every bad line reported, idempotence and conflicts."""

from __future__ import annotations

import json

import pytest

from annotation.errors import LongFileRefused
from annotation.models import AuditEvent
from jury.models import Judge, JudgeScore, MetricScore
from jury.score_imports import import_scores, scores_long_rows
from tests.factories import make_study_with_members

HEADER = "external_id,model,kind,scorer,criterion,value,comment\n"


@pytest.fixture
def study(db):
    return make_study_with_members(n_items=4)


def run(study, text: str, name: str = "scores.csv"):
    return import_scores(study=study.study, data=text.encode(), name=name, actor=study.coordinator)


def refused(study, text: str, name: str = "scores.csv") -> list:
    before = JudgeScore.objects.count(), MetricScore.objects.count(), Judge.objects.count()
    with pytest.raises(LongFileRefused) as info:
        run(study, text, name)
    assert (
        JudgeScore.objects.count(),
        MetricScore.objects.count(),
        Judge.objects.count(),
    ) == before
    return [(e.line, e.column, e.reason) for e in info.value.errors]


def test_judge_verdicts_and_any_metric_are_imported(study):
    text = HEADER + (
        "case-0000,model-a,judge,panel-gpt,accuracy,4.5,because\n"
        "case-0000,model-a,judge,panel-gpt,clarity,3,\n"
        "case-0000,model-a,metric,bleu,,0.31,\n"
        "case-0001,model-a,metric,medcon@umls-2024,overall,0.7,\n"
    )
    summary = run(study, text)
    assert (summary.created, summary.unchanged, summary.new_names) == (4, 0, ["panel-gpt"])
    judge = Judge.objects.get(name="panel-gpt")
    assert judge.provider == Judge.Provider.IMPORTED
    score = JudgeScore.objects.get(criterion__key="accuracy")
    assert (score.value, score.explanation, score.call_id) == (4.5, "because", None)
    metrics = {(m.metric, m.scorer_model): m.value for m in MetricScore.objects.all()}
    assert metrics == {("bleu", ""): 0.31, ("medcon", "umls-2024"): 0.7}


def test_an_existing_judge_is_used_by_name(study):
    judge = Judge.objects.create(name="house-judge", provider="openai", model_id="gpt", weight=2)
    run(study, HEADER + "case-0000,model-a,judge,house-judge,accuracy,4,\n")
    assert JudgeScore.objects.get().judge == judge
    assert Judge.objects.count() == 1


def test_every_bad_line_is_named_with_its_column(study):
    text = HEADER + (
        "case-0000,model-a,judge,j,accuracy,4,\n"  # good
        "case-0000,model-a,jury,j,accuracy,4,\n"  # unknown kind
        "case-0000,model-a,judge,j,,4,\n"  # judge without criterion
        "case-0000,model-a,judge,j,accuracy,9,\n"  # off the scale
        "case-0000,model-a,metric,bleu,accuracy,0.2,\n"  # metric on a criterion
        "case-0000,model-a,metric,bleu,,inf,\n"  # not finite
        "case-0000,model-a,metric,@x,,0.2,\n"  # no metric name
        "case-0099,model-a,metric,bleu,,0.2,\n"  # unknown item
        "case-0000,model-a,judge,j,accuracy,4,\n"  # twice
    )
    errors = refused(study, text)
    assert [(line, column) for line, column, _ in errors] == [
        (3, "kind"),
        (4, "criterion"),
        (5, "value"),
        (6, "criterion"),
        (7, "value"),
        (8, "scorer"),
        (9, "external_id"),
        (10, "scorer"),
    ]
    reasons = {line: reason for line, _, reason in errors}
    assert reasons[5] == "9 is outside the scale of accuracy (1 to 5)"
    assert "first at line 2" in reasons[10]


def test_the_same_file_twice_changes_nothing_and_a_conflict_refuses(study):
    text = HEADER + "case-0000,model-a,judge,j,accuracy,4,\ncase-0000,model-a,metric,bleu,,0.25,\n"
    run(study, text)
    events = AuditEvent.objects.filter(action="scores.import").count()
    summary = run(study, text)
    assert (summary.created, summary.unchanged) == (0, 2)
    assert AuditEvent.objects.filter(action="scores.import").count() == events == 1
    errors = refused(study, HEADER + "case-0000,model-a,metric,bleu,,0.5,\n")
    assert errors == [
        (
            2,
            "value",
            "conflicts with the stored metric score 0.25 of 'bleu' on this item; an import "
            "never changes a stored score",
        )
    ]


def test_jsonl_scores_and_the_export_reads_back_the_same(study):
    lines = [
        {
            "external_id": "case-0001",
            "model": "model-a",
            "kind": "judge",
            "judge": "j",
            "criterion": "clarity",
            "value": 2,
        },
        {
            "external_id": "case-0001",
            "model": "model-a",
            "kind": "metric",
            "name": "rouge_l_f1",
            "value": 0.5,
        },
    ]
    summary = run(study, "\n".join(json.dumps(line) for line in lines), name="s.jsonl")
    assert (summary.file_format, summary.created) == ("jsonl", 2)
    rows = scores_long_rows(study=study.study)
    assert [(r["kind"], r["scorer"], r["criterion"], r["value"]) for r in rows] == [
        ("judge", "j", "clarity", 2),
        ("metric", "rouge_l_f1", "overall", 0.5),
    ]
