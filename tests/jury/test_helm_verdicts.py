"""Importing a HELM run's MedHELM jury verdicts as judge scores (jury/helm_verdicts.py, the
jury.import_helm_verdicts task and the import_helm_verdicts command)."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from statistics import mean
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotation import imports, services
from annotation.importers import pack_helm_run
from annotation.models import AuditEvent, ImportJob, Item
from jury.helm_verdicts import HelmVerdictReport, import_helm_verdicts
from jury.models import Judge, JudgeScore
from tests.support.jury_aggregate import jury_composites, jury_item_scores
from jury.tasks import import_helm_verdicts_for_job
from tests.factories import MEDHELM_CRITERIA, UserFactory

HELM_RUN = Path(__file__).parent / "data" / "helm_run" / "medi_qa"
MODEL = "demo_vendor/demo-model-7b"
JUDGES = ("gpt", "llama", "claude")
CRITERIA = ("accuracy", "completeness", "clarity")

Stored = dict[tuple[str, str, str], tuple[float | None, bool, str]]


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def coordinator(db):
    return UserFactory()


@pytest.fixture
def study(coordinator):
    return services.create_study(
        name="HELM jury study", created_by=coordinator, criteria=MEDHELM_CRITERIA
    )


def sample_states(run: Path = HELM_RUN) -> list[dict[str, Any]]:
    return json.loads((run / "scenario_state.json").read_text(encoding="utf-8"))["request_states"]


def import_items(study, actor, run: Path = HELM_RUN) -> ImportJob:
    job = imports.start_import(
        study=study,
        uploaded_name="medi_qa:model=demo_vendor_demo-model-7b.zip",
        content=pack_helm_run(run),
        file_format="helm",
        actor=actor,
        background=False,
    )
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    return job


def run_copy(tmp_path: Path, change: Callable[[list[dict[str, Any]]], None]) -> Path:
    """A copy of the sample run whose request states `change` edits in place."""
    folder = tmp_path / "runs" / "medi_qa"
    folder.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(HELM_RUN, folder)
    state = json.loads((folder / "scenario_state.json").read_text(encoding="utf-8"))
    change(state["request_states"])
    (folder / "scenario_state.json").write_text(json.dumps(state), encoding="utf-8")
    return folder


def verdicts(states: list[dict[str, Any]]) -> Stored:
    """Every judge score in the run, keyed as stored() keys them."""
    found: Stored = {}
    for state in states:
        external_id = f"medi_qa/{state['instance']['id']}"
        for judge in JUDGES:
            for criterion, verdict in state["annotations"]["medi_qa"].get(judge, {}).items():
                found[(external_id, f"helm:{judge}", criterion)] = (
                    verdict["score"],
                    True,
                    verdict["explanation"],
                )
    return found


def stored(study) -> Stored:
    rows = JudgeScore.objects.filter(item__study=study, call__isnull=True).values_list(
        "item__external_id", "judge__name", "criterion__key", "value", "is_valid", "explanation"
    )
    return {(e, j, c): (v, ok, x) for e, j, c, v, ok, x in rows}


def snapshot(study) -> list[tuple]:
    return list(
        JudgeScore.objects.filter(item__study=study)
        .order_by("pk")
        .values_list(
            "pk", "item_id", "judge_id", "criterion_id", "value", "is_valid", "explanation"
        )
    )


def edit(index: int, judge: str, criterion: str, **fields: Any):
    def change(states: list[dict[str, Any]]) -> None:
        states[index]["annotations"]["medi_qa"][judge][criterion].update(fields)

    return change


# --- the sample run --------------------------------------------------------------------------


def test_sample_run_imports_every_verdict_as_a_judge_score(study, coordinator):
    import_items(study, coordinator)

    report = import_helm_verdicts(study=study, source=HELM_RUN, actor=coordinator)

    assert report.ok and report.saved, report.as_dict()
    assert report.request_states == 4
    assert report.judges == report.judges_created == ["helm:claude", "helm:gpt", "helm:llama"]
    for judge in JUDGES:
        j = Judge.objects.get(name=f"helm:{judge}")
        assert (j.provider, j.model_id, j.is_active) == (Judge.Provider.IMPORTED, judge, True)
    expected = verdicts(sample_states())
    assert len(expected) == 27  # three judged states x 3 judges x 3 criteria
    assert stored(study) == expected  # every score equals its JSON value, all valid
    assert report.scores_created == 27
    assert (report.unchanged, report.invalid, report.missing) == (0, [], {})
    assert (report.unknown_criteria, report.unmatched, report.conflicts) == ({}, [], [])
    assert JudgeScore.objects.filter(call__isnull=False).count() == 0
    # id104: an empty completion, prompt_text null and no judge keys: no score, not "missing"
    empty = Item.objects.get(study=study, external_id="medi_qa/id104")
    assert empty.output_text == ""
    assert not JudgeScore.objects.filter(item=empty).exists()
    assert report.not_judged == 1
    event = AuditEvent.objects.get(action="jury.helm_import")
    assert (event.actor, event.study, event.target_type) == (coordinator, study, "RatingStudy")
    assert event.after["scores_created"] == 27
    assert event.after["judges_created"] == ["helm:claude", "helm:gpt", "helm:llama"]


@pytest.mark.parametrize("form", ["directory", "zip path", "zip bytes", "scenario_state.json"])
def test_every_source_form_matches_the_same_items(study, coordinator, tmp_path, form):
    import_items(study, coordinator)
    if form == "directory":
        source: Any = HELM_RUN
    elif form == "scenario_state.json":
        source = str(HELM_RUN / "scenario_state.json")
    else:
        source = pack_helm_run(HELM_RUN)
        if form == "zip path":
            (tmp_path / "run.zip").write_bytes(source)
            source = tmp_path / "run.zip"

    report = import_helm_verdicts(study=study, source=source, actor=coordinator)

    assert report.ok and report.scores_created == 27 and report.unmatched == []


def test_jury_aggregate_over_imported_judges_is_the_mean_of_the_nine_ratings(study, coordinator):
    import_items(study, coordinator)
    import_helm_verdicts(study=study, source=HELM_RUN, actor=coordinator)

    composites = jury_composites(study=study)
    items = dict(Item.objects.filter(study=study).values_list("external_id", "pk"))
    judged = [s for s in sample_states() if "gpt" in s["annotations"]["medi_qa"]]
    assert len(judged) == 3
    for state in judged:
        ratings = [
            state["annotations"]["medi_qa"][judge][criterion]["score"]
            for judge in JUDGES
            for criterion in CRITERIA
        ]
        assert len(ratings) == 9
        value, n_judges = composites[items[f"medi_qa/{state['instance']['id']}"]]
        # MedHELM: the jury score is the mean of all 9 ratings (3 judges x 3 criteria)
        assert value == pytest.approx(mean(ratings))
        assert n_judges == 3
    assert items["medi_qa/id104"] not in composites
    # e.g. id102: (1+2+4) + (2+2+4) + (1+1+4) = 21 over 9
    assert composites[items["medi_qa/id102"]][0] == pytest.approx(21 / 9)


# --- re-imports and conflicts ----------------------------------------------------------------


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


# --- what real runs hold ---------------------------------------------------------------------


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


def test_out_of_scale_and_non_numeric_scores_are_stored_invalid(study, coordinator, tmp_path):
    import_items(study, coordinator)
    changes = [
        edit(0, "gpt", "accuracy", score=7),
        edit(0, "llama", "completeness", score=0),
        edit(0, "claude", "clarity", score="4"),
        edit(1, "gpt", "completeness", score=3.5),
        edit(1, "llama", "clarity", score=None),
        edit(1, "claude", "accuracy", score=True),
        edit(2, "gpt", "clarity", score=5.0),  # an integer written as 5.0 is fine
    ]

    def change(states: list[dict[str, Any]]) -> None:
        for one in changes:
            one(states)

    report = import_helm_verdicts(study=study, source=run_copy(tmp_path, change), actor=coordinator)

    assert report.ok and report.scores_created == 27
    assert [e.as_dict() for e in report.invalid] == [
        {
            "where": "request_states[0].annotations.medi_qa.gpt.accuracy",
            "reason": "score 7 is outside 1-5; stored as invalid",
        },
        {
            "where": "request_states[0].annotations.medi_qa.llama.completeness",
            "reason": "score 0 is outside 1-5; stored as invalid",
        },
        {
            "where": "request_states[0].annotations.medi_qa.claude.clarity",
            "reason": "score '4' is not a number; stored as invalid",
        },
        {
            "where": "request_states[1].annotations.medi_qa.gpt.completeness",
            "reason": "score 3.5 is not an integer; stored as invalid",
        },
        {
            "where": "request_states[1].annotations.medi_qa.llama.clarity",
            "reason": "score null is not a number; stored as invalid",
        },
        {
            "where": "request_states[1].annotations.medi_qa.claude.accuracy",
            "reason": "score True is not a number; stored as invalid",
        },
    ]
    scores = stored(study)
    # the value is kept when numeric, never clamped or rounded
    assert scores[("medi_qa/id101", "helm:gpt", "accuracy")][:2] == (7, False)
    assert scores[("medi_qa/id101", "helm:llama", "completeness")][:2] == (0, False)
    assert scores[("medi_qa/id101", "helm:claude", "clarity")][:2] == (None, False)
    assert scores[("medi_qa/id102", "helm:gpt", "completeness")][:2] == (3.5, False)
    assert scores[("medi_qa/id102", "helm:llama", "clarity")][:2] == (None, False)
    assert scores[("medi_qa/id102", "helm:claude", "accuracy")][:2] == (None, False)
    assert scores[("medi_qa/id103", "helm:gpt", "clarity")][:2] == (5, True)
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
    assert (again.ok, again.scores_created, again.unchanged, len(again.invalid)) == (
        True,
        0,
        27,
        6,
    )


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


# --- refusals --------------------------------------------------------------------------------


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
        {"where": "study", "reason": "the study is locked; verdicts can no longer be imported"}
    ]
    assert not JudgeScore.objects.exists() and not Judge.objects.exists()


# --- the task --------------------------------------------------------------------------------


def test_task_imports_the_verdicts_of_a_succeeded_helm_import(study, coordinator):
    job = import_items(study, coordinator)

    result = import_helm_verdicts_for_job(job.pk)

    assert result["status"] == "imported" and result["scores_created"] == 27
    assert stored(study) == verdicts(sample_states())
    event = AuditEvent.objects.get(action="jury.helm_import")
    assert event.actor == coordinator
    before = snapshot(study)
    again = import_helm_verdicts_for_job(job.pk)  # a second delivery
    assert (again["status"], again["scores_created"], again["unchanged"]) == ("imported", 0, 27)
    assert snapshot(study) == before


@pytest.mark.parametrize(
    ("uploaded_name", "external_id"),
    [
        ("medi_qa:model=demo_vendor_demo-model-7b.json", "medi_qa/id101"),
        ("scenario_state.json", "id101"),
    ],
)
def test_task_forms_the_ids_as_the_item_import_did_for_a_bare_scenario_state(
    study, coordinator, uploaded_name, external_id
):
    job = imports.start_import(
        study=study,
        uploaded_name=uploaded_name,
        content=(HELM_RUN / "scenario_state.json").read_bytes(),
        file_format="helm",
        actor=coordinator,
        background=False,
    )
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert Item.objects.filter(study=study, external_id=external_id).exists()

    result = import_helm_verdicts_for_job(job.pk)

    assert (result["status"], result["scores_created"], result["unmatched"]) == (
        "imported",
        27,
        0,
    )


def test_task_skips_other_jobs(study, coordinator):
    jsonl = imports.start_import(
        study=study,
        uploaded_name="items.jsonl",
        content=json.dumps({"id": "x1", "input": "Q?", "output": "A.", "model": MODEL}).encode(),
        file_format="jsonl",
        actor=coordinator,
        background=False,
    )
    failed = imports.start_import(
        study=study,
        uploaded_name="run.zip",
        content=b"PK\x03\x04 not really a zip",
        file_format="helm",
        actor=coordinator,
        background=False,
    )
    assert failed.status == ImportJob.Status.FAILED
    queued = ImportJob.objects.create(
        study=study, created_by=coordinator, file_format="helm", source_path="imports/none.zip"
    )

    assert import_helm_verdicts_for_job(jsonl.pk)["status"] == "skipped"
    assert import_helm_verdicts_for_job(failed.pk)["status"] == "skipped"
    assert import_helm_verdicts_for_job(queued.pk)["status"] == "skipped"
    assert import_helm_verdicts_for_job(10**9)["status"] == "missing"
    assert not JudgeScore.objects.exists() and not Judge.objects.exists()


def test_task_reports_a_conflict_without_saving(study, coordinator, tmp_path):
    job = import_items(study, coordinator)
    changed = run_copy(tmp_path, edit(0, "gpt", "accuracy", score=1))
    import_helm_verdicts(study=study, source=changed, actor=coordinator)
    before = snapshot(study)

    result = import_helm_verdicts_for_job(job.pk)

    assert result["status"] == "failed" and result["saved"] is False
    assert [c["where"] for c in result["conflicts"]] == [
        "request_states[0].annotations.medi_qa.gpt.accuracy"
    ]
    assert snapshot(study) == before


# --- the command -----------------------------------------------------------------------------


def test_command_imports_a_run_directory(study, coordinator, capsys):
    import_items(study, coordinator)
    researcher = UserFactory()

    call_command(
        "import_helm_verdicts", "--study", str(study.pk), "--as", researcher.username, str(HELM_RUN)
    )

    out = capsys.readouterr().out
    assert "27 scores created, 0 unchanged, 0 invalid" in out
    assert "helm:claude, helm:gpt, helm:llama" in out
    assert AuditEvent.objects.get(action="jury.helm_import").actor == researcher


def test_command_lists_conflicts_and_fails(study, coordinator, tmp_path, capsys):
    import_items(study, coordinator)
    import_helm_verdicts(study=study, source=HELM_RUN, actor=coordinator)
    changed = run_copy(tmp_path, edit(1, "llama", "clarity", score=1))

    with pytest.raises(CommandError, match="1 problem; nothing was saved"):
        call_command("import_helm_verdicts", "--study", str(study.pk), str(changed))

    err = capsys.readouterr().err
    assert "request_states[1].annotations.medi_qa.llama.clarity: helm:llama's clarity" in err


def test_command_refuses_an_unknown_study_or_path(study, tmp_path):
    with pytest.raises(CommandError, match="no rating study"):
        call_command("import_helm_verdicts", "--study", "999999", str(HELM_RUN))
    with pytest.raises(CommandError, match="does not exist"):
        call_command("import_helm_verdicts", "--study", str(study.pk), str(tmp_path / "nope"))


def test_report_as_dict_is_json_ready(study, coordinator):
    import_items(study, coordinator)
    report = import_helm_verdicts(study=study, source=HELM_RUN, actor=coordinator)

    assert isinstance(report, HelmVerdictReport)
    assert json.loads(json.dumps(report.as_dict()))["scores_created"] == 27
