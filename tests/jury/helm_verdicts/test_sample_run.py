"""The sample HELM run: every verdict becomes a judge score, from any source form."""

from __future__ import annotations

from statistics import mean
from typing import Any

import pytest

from annotation.imports import pack_helm_run, read_helm_run
from annotation.models import AuditEvent, Item
from jury.helm_verdicts import import_helm_verdicts
from jury.models import Judge, JudgeScore
from tests.jury.helm_verdicts.factories import (
    CRITERIA,
    HELM_RUN,
    JUDGES,
    import_items,
    sample_states,
    stored,
    verdicts,
)
from tests.support.jury_aggregate import jury_composites


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


def test_the_run_is_read_once_for_items_and_verdicts(study, coordinator, monkeypatch):
    from jury.helm_verdicts import importing

    import_items(study, coordinator)
    reads = []

    def counted(source, **kwargs):
        reads.append(source)
        return read_helm_run(source, **kwargs)

    monkeypatch.setattr(importing, "read_helm_run", counted)
    report = import_helm_verdicts(study=study, source=pack_helm_run(HELM_RUN), actor=coordinator)

    assert report.ok and report.scores_created == 27
    assert len(reads) == 1
