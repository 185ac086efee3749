"""Runs and studies the import refuses, saving nothing."""

from __future__ import annotations

from typing import Any

from annotation import services
from jury.helm_verdicts import import_helm_verdicts
from jury.models import Judge, JudgeScore
from tests.jury.helm_verdicts.factories import HELM_RUN, import_items, run_copy


def test_an_unreadable_run_is_an_error(study, coordinator, tmp_path):
    empty = tmp_path / "empty_run"
    empty.mkdir()

    report = import_helm_verdicts(study=study, source=empty, actor=coordinator)

    assert not report.ok and not report.saved
    assert [e.where for e in report.errors] == ["file"]
    assert "no scenario_state.json" in report.errors[0].reason


def test_a_non_imported_judge_with_the_name_is_refused(study, coordinator):
    import_items(study, coordinator)
    Judge.objects.create(name="helm:gpt", provider=Judge.Provider.OPENAI, model_id="gpt-4o")

    report = import_helm_verdicts(study=study, source=HELM_RUN, actor=coordinator)

    assert not report.ok and not report.saved
    assert [e.where for e in report.errors] == ["judges"]
    assert "'helm:gpt' exists with provider 'openai'" in report.errors[0].reason
    assert not JudgeScore.objects.exists()
    assert list(Judge.objects.values_list("name", flat=True)) == ["helm:gpt"]


def test_a_judge_key_too_long_for_a_judge_name_is_refused(study, coordinator, tmp_path):
    import_items(study, coordinator)
    key = "j" * 100

    def change(states: list[dict[str, Any]]) -> None:
        states[0]["annotations"]["medi_qa"][key] = states[0]["annotations"]["medi_qa"].pop("gpt")

    report = import_helm_verdicts(study=study, source=run_copy(tmp_path, change), actor=coordinator)

    assert [e.as_dict() for e in report.errors] == [
        {"where": "judges", "reason": f"judge key {key!r} is too long"}
    ]
    assert not JudgeScore.objects.exists() and not Judge.objects.exists()


def test_a_locked_study_is_refused(study, coordinator):
    import_items(study, coordinator)
    services.set_study_lock(study=study, locked=True, actor=coordinator)

    report = import_helm_verdicts(study=study, source=HELM_RUN, actor=coordinator)

    assert [e.as_dict() for e in report.errors] == [
        {
            "where": "study",
            "reason": "the study is locked: its verdicts cannot change until a coordinator unlocks it",
        }
    ]
    assert not JudgeScore.objects.exists() and not Judge.objects.exists()
