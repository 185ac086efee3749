"""Importing a run again changes nothing; a verdict that differs from a stored one, or from
another in the same run, is a conflict and nothing is saved."""

from __future__ import annotations

import copy
from typing import Any

from annotation.imports import pack_helm_run
from annotation.models import AuditEvent
from jury.helm_verdicts import import_helm_verdicts
from jury.models import Judge, JudgeScore
from tests.jury.helm_verdicts.factories import (
    HELM_RUN,
    edit,
    import_items,
    run_copy,
    sample_states,
    snapshot,
    stored,
    verdicts,
)


def test_reimport_changes_nothing(study, coordinator):
    import_items(study, coordinator)
    import_helm_verdicts(study=study, source=HELM_RUN, actor=coordinator)
    before = snapshot(study)
    judges = list(Judge.objects.values_list("pk", "name"))
    events = AuditEvent.objects.count()

    report = import_helm_verdicts(study=study, source=pack_helm_run(HELM_RUN), actor=coordinator)

    assert report.ok and report.saved
    assert (report.scores_created, report.unchanged, report.judges_created) == (0, 27, [])
    assert report.judges == ["helm:claude", "helm:gpt", "helm:llama"]
    assert snapshot(study) == before
    assert list(Judge.objects.values_list("pk", "name")) == judges
    assert AuditEvent.objects.count() == events  # nothing changed, nothing to audit


def test_a_conflicting_value_fails_with_where_and_reason_and_saves_nothing(
    study, coordinator, tmp_path
):
    import_items(study, coordinator)
    import_helm_verdicts(study=study, source=HELM_RUN, actor=coordinator)
    before = snapshot(study)
    events = AuditEvent.objects.count()

    def change(states: list[dict[str, Any]]) -> None:
        edit(0, "gpt", "accuracy", score=2)(states)  # was 4
        # and something that would otherwise be new: a fourth judge on id102
        states[1]["annotations"]["medi_qa"]["gemini"] = copy.deepcopy(
            states[1]["annotations"]["medi_qa"]["gpt"]
        )

    report = import_helm_verdicts(study=study, source=run_copy(tmp_path, change), actor=coordinator)

    assert not report.ok and not report.saved
    assert [c.as_dict() for c in report.conflicts] == [
        {
            "where": "request_states[0].annotations.medi_qa.gpt.accuracy",
            "reason": "helm:gpt's accuracy score for 'medi_qa/id101' (model "
            "'demo_vendor/demo-model-7b') is already imported as 4 (valid), this run says "
            "2 (valid); an import never changes an existing score",
        }
    ]
    assert (report.scores_created, report.judges_created) == (0, [])
    assert snapshot(study) == before
    assert not Judge.objects.filter(name="helm:gemini").exists()
    assert AuditEvent.objects.count() == events


def test_a_different_explanation_is_a_conflict_too(study, coordinator, tmp_path):
    import_items(study, coordinator)
    import_helm_verdicts(study=study, source=HELM_RUN, actor=coordinator)

    changed = run_copy(tmp_path, edit(2, "claude", "clarity", explanation="rewritten"))
    report = import_helm_verdicts(study=study, source=changed, actor=coordinator)

    assert [c.where for c in report.conflicts] == [
        "request_states[2].annotations.medi_qa.claude.clarity"
    ]
    assert "different explanation" in report.conflicts[0].reason
    assert stored(study) == verdicts(sample_states())


def test_two_scenarios_disagreeing_on_one_score_is_a_conflict(study, coordinator, tmp_path):
    import_items(study, coordinator)

    def change(states: list[dict[str, Any]]) -> None:
        twin = copy.deepcopy(states[0]["annotations"]["medi_qa"])
        twin["gpt"]["clarity"]["score"] = 1
        states[0]["annotations"]["medi_qa_copy"] = twin

    report = import_helm_verdicts(study=study, source=run_copy(tmp_path, change), actor=coordinator)

    assert [c.where for c in report.conflicts] == [
        "request_states[0].annotations.medi_qa_copy.gpt.clarity"
    ]
    assert "differs from the first (request_states[0].annotations.medi_qa.gpt.clarity)" in (
        report.conflicts[0].reason
    )
    assert not JudgeScore.objects.exists() and not Judge.objects.exists()
