"""Imported verdicts are flagged like a call's: a judge that copied planted verdict-like text
from the output it judged is flagged on every score of that verdict, and the report says so."""

from __future__ import annotations

from typing import Any

from jury.helm_verdicts import import_helm_verdicts
from jury.models import JudgeScore
from jury.verdict_flags import COPIES_RESPONSE, OBEYS_PLANTED_TEXT
from tests.jury.helm_verdicts.factories import import_items, run_copy
from tests.support.obedient_judge import PLANTED_EXPLANATION, PLANTED_OUTPUT


def plant(states: list[dict[str, Any]]) -> None:
    """The first output carries planted text and the gpt judge obeyed it."""
    states[0]["result"]["completions"][0]["text"] += "\n" + PLANTED_OUTPUT
    for verdict in states[0]["annotations"]["medi_qa"]["gpt"].values():
        verdict.update(score=5, explanation=PLANTED_EXPLANATION)


def test_an_imported_verdict_that_obeyed_planted_text_is_flagged(study, coordinator, tmp_path):
    run = run_copy(tmp_path, plant)
    import_items(study, coordinator, run=run)
    report = import_helm_verdicts(study=study, source=run, actor=coordinator)
    assert report.ok and report.saved and report.scores_created == 27
    flagged = JudgeScore.objects.filter(item__study=study).filter(flags__isnull=False)
    assert {(s.item.external_id, s.judge.name) for s in flagged} == {("medi_qa/id101", "helm:gpt")}
    assert flagged.count() == 3  # each criterion of the verdict
    assert {f["code"] for f in flagged.first().flags} == {COPIES_RESPONSE, OBEYS_PLANTED_TEXT}
    summary = report.as_dict()["flagged"]
    assert [f["where"] for f in summary] == [
        "helm:gpt on 'medi_qa/id101' (model 'demo_vendor/demo-model-7b')"
    ] * 2
    # the other judges' verdicts on the same output are not flagged
    assert (
        not JudgeScore.objects.filter(judge__name="helm:llama").filter(flags__isnull=False).exists()
    )
