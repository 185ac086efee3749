"""What real runs hold: missing judges, extra keys, scores off the scale, criteria outside the
rubric, request states without an item."""

from __future__ import annotations

from typing import Any

from annotation import services
from annotation.models import AuditEvent, Item
from jury.helm_verdicts import import_helm_verdicts
from jury.models import Judge, JudgeScore
from tests.factories import MEDHELM_CRITERIA
from tests.jury.helm_verdicts.factories import (
    HELM_RUN,
    JUDGES,
    edit,
    import_items,
    run_copy,
    sample_states,
    stored,
    verdicts,
)
from tests.support.jury_aggregate import jury_composites, jury_item_scores


def test_a_missing_judge_key_is_counted_not_an_error(study, coordinator, tmp_path):
    import_items(study, coordinator)

    def change(states: list[dict[str, Any]]) -> None:
        del states[1]["annotations"]["medi_qa"]["llama"]  # llama failed on id102

    report = import_helm_verdicts(study=study, source=run_copy(tmp_path, change), actor=coordinator)

    assert report.ok and report.saved
    assert report.missing == {"helm:llama": 1}
    assert report.scores_created == 24
    id102 = Item.objects.get(study=study, external_id="medi_qa/id102")
    assert set(JudgeScore.objects.filter(item=id102).values_list("judge__name", flat=True)) == {
        "helm:gpt",
        "helm:claude",
    }
    # the aggregate says how many judges stand behind it
    assert jury_composites(study=study)[id102.pk][1] == 2


def test_all_judges_failing_counts_each_missing(study, coordinator, tmp_path):
    import_items(study, coordinator)

    def change(states: list[dict[str, Any]]) -> None:
        for judge in JUDGES:  # the jury was asked (prompt_text set) but nobody answered
            del states[2]["annotations"]["medi_qa"][judge]

    report = import_helm_verdicts(study=study, source=run_copy(tmp_path, change), actor=coordinator)

    assert report.missing == {"helm:claude": 1, "helm:gpt": 1, "helm:llama": 1}
    assert (report.not_judged, report.scores_created) == (1, 18)


def test_extra_unknown_keys_are_ignored(study, coordinator, tmp_path):
    import_items(study, coordinator)

    def change(states: list[dict[str, Any]]) -> None:
        for state in states:
            state["stats"] = {"num_tokens": 12}
            annotations = state["annotations"]
            annotations["other_annotator"] = {"label": "fine", "prompt_text": None}
            annotations["note"] = "not an object"
            scenario = annotations["medi_qa"]
            scenario["usage"] = {"prompt_tokens": 700, "completion_tokens": 80}
            scenario["model_info"] = "gpt-4o / llama-3.3-70b / claude-3.7-sonnet"
            for judge in JUDGES:
                if judge in scenario:
                    scenario[judge]["overall_comment"] = "a judge that talks too much"
                    scenario[judge]["meta"] = {"latency": 1.2}
                    scenario[judge]["accuracy"]["confidence"] = 0.9

    report = import_helm_verdicts(study=study, source=run_copy(tmp_path, change), actor=coordinator)

    assert report.ok and report.scores_created == 27, report.as_dict()
    assert (report.unknown_criteria, report.missing, report.invalid) == ({}, {}, [])
    assert report.judges == ["helm:claude", "helm:gpt", "helm:llama"]
    assert stored(study) == verdicts(sample_states())


# (request state, judge, criterion, score written, why it is invalid or None, value stored)
ODD_SCORES = [
    (0, "gpt", "accuracy", 7, "score 7 is outside 1-5", 7),
    (0, "llama", "completeness", 0, "score 0 is outside 1-5", 0),
    (0, "claude", "clarity", "4", "score '4' is not a number", None),
    (1, "gpt", "completeness", 3.5, "score 3.5 is not an integer", 3.5),
    (1, "llama", "clarity", None, "score null is not a number", None),
    (1, "claude", "accuracy", True, "score True is not a number", None),
    (2, "gpt", "clarity", 5.0, None, 5),  # an integer written as 5.0 is fine
]


def test_out_of_scale_and_non_numeric_scores_are_stored_invalid(study, coordinator, tmp_path):
    import_items(study, coordinator)

    def change(states: list[dict[str, Any]]) -> None:
        for index, judge, criterion, written, _why, _value in ODD_SCORES:
            edit(index, judge, criterion, score=written)(states)

    report = import_helm_verdicts(study=study, source=run_copy(tmp_path, change), actor=coordinator)

    assert report.ok and report.scores_created == 27
    assert [e.as_dict() for e in report.invalid] == [
        {
            "where": f"request_states[{index}].annotations.medi_qa.{judge}.{criterion}",
            "reason": f"{why}; stored as invalid",
        }
        for index, judge, criterion, _written, why, _value in ODD_SCORES
        if why is not None
    ]
    scores = stored(study)
    # the value is kept when numeric, never clamped or rounded
    for index, judge, criterion, _written, why, value in ODD_SCORES:
        key = (f"medi_qa/id10{index + 1}", f"helm:{judge}", criterion)
        assert scores[key][:2] == (value, why is None)
    # the jury aggregate leaves invalid scores out and says so
    id101 = Item.objects.get(study=study, external_id="medi_qa/id101").pk
    accuracy = next(
        s for s in jury_item_scores(study=study) if s.item_id == id101 and s.criterion == "accuracy"
    )
    assert (accuracy.value, accuracy.n_judges) == (4, 2)
    # and a second import of the same run changes nothing, invalid ones included
    again = import_helm_verdicts(
        study=study, source=tmp_path / "runs" / "medi_qa", actor=coordinator
    )
    assert (again.ok, again.scores_created, again.unchanged, len(again.invalid)) == (True, 0, 27, 6)


def test_criteria_not_in_the_rubric_are_reported_not_saved(coordinator, tmp_path):
    study = services.create_study(
        name="Two criteria",
        created_by=coordinator,
        criteria=[c for c in MEDHELM_CRITERIA if c["key"] != "completeness"],
    )
    import_items(study, coordinator)

    def change(states: list[dict[str, Any]]) -> None:
        states[0]["annotations"]["medi_qa"]["gpt"]["safety"] = {"score": 5, "explanation": "ok"}

    report = import_helm_verdicts(study=study, source=run_copy(tmp_path, change), actor=coordinator)

    assert report.ok and report.saved
    assert report.unknown_criteria == {"completeness": 9, "safety": 1}
    assert report.scores_created == 18
    assert set(JudgeScore.objects.values_list("criterion__key", flat=True)) == {
        "accuracy",
        "clarity",
    }


def test_a_rubric_criterion_the_run_does_not_score_is_counted(coordinator):
    four = services.create_study(
        name="Four criteria",
        created_by=coordinator,
        criteria=[*MEDHELM_CRITERIA, {"key": "safety", "label": "Safety"}],
    )
    import_items(four, coordinator)

    report = import_helm_verdicts(study=four, source=HELM_RUN, actor=coordinator)

    assert report.ok and report.scores_created == 27
    assert report.missing_criteria == {"safety": 9}  # 3 judged items x 3 judges


def test_request_states_without_an_item_are_reported(study, coordinator):
    import_items(study, coordinator)
    Item.objects.filter(study=study, external_id="medi_qa/id103").delete()

    report = import_helm_verdicts(study=study, source=HELM_RUN, actor=coordinator)

    assert report.ok and report.saved and report.scores_created == 18
    assert [u.as_dict() for u in report.unmatched] == [
        {
            "where": "request_states[2]",
            "reason": "no item 'medi_qa/id103' with model 'demo_vendor/demo-model-7b' in this "
            "study; its verdicts are skipped",
        }
    ]


def test_a_failed_request_state_is_reported_with_the_item_importers_reason(
    study, coordinator, tmp_path
):
    import_items(study, coordinator)

    def change(states: list[dict[str, Any]]) -> None:
        states[2]["result"]["success"] = False
        states[2]["result"]["error"] = "rate limited"

    report = import_helm_verdicts(study=study, source=run_copy(tmp_path, change), actor=coordinator)

    assert report.ok and report.scores_created == 18
    assert [u.as_dict() for u in report.unmatched] == [
        {
            "where": "request_states[2]",
            "reason": "not an item of this run (skipped: the request failed (rate limited)); "
            "its verdicts are skipped",
        }
    ]


def test_a_study_without_the_items_gets_nothing(study, coordinator):
    report = import_helm_verdicts(study=study, source=HELM_RUN, actor=coordinator)

    assert report.ok and report.scores_created == 0
    assert [u.where for u in report.unmatched] == [f"request_states[{i}]" for i in range(3)]
    assert not Judge.objects.exists()
    assert not AuditEvent.objects.filter(action="jury.helm_import").exists()


def test_nul_characters_leave_an_explanation_not_the_import(study, coordinator, tmp_path):
    import_items(study, coordinator)
    changed = run_copy(tmp_path, edit(0, "gpt", "clarity", explanation="clear\u0000 enough"))

    # a stream works too; without a file name to go by, name_hint names the run
    with changed.joinpath("scenario_state.json").open("rb") as stream:
        report = import_helm_verdicts(
            study=study, source=stream, actor=coordinator, name_hint="medi_qa:model=x"
        )

    assert report.ok and report.scores_created == 27
    assert stored(study)[("medi_qa/id101", "helm:gpt", "clarity")] == (5, True, "clear enough")
