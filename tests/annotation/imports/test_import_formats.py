"""Each format imported end to end: every field reaches the saved item."""

from __future__ import annotations

import json

from annotation import imports
from annotation.imports import pack_helm_run
from annotation.models import AuditEvent, ImportJob, Item
from tests.annotation.imports.factories import DATA, HELM_RUN, item_state, start


def node(taxonomy, name):
    return taxonomy.nodes.get(name=name)


def test_jsonl_import_saves_every_field(study, coordinator, taxonomy, media_root):
    job = start(study, coordinator, (DATA / "items.jsonl").read_bytes())

    assert job.status == ImportJob.Status.SUCCEEDED
    assert (job.total_rows, job.processed_rows, job.created_items, job.unchanged_items) == (
        3,
        3,
        3,
        0,
    )
    assert job.finished_at is not None
    items = {i.external_id: i for i in Item.objects.filter(study=study)}
    assert item_state(items["case-001"]) == (
        "case-001",
        "model-a",
        "A 54-year-old man with chest pain.\nWhat next?",
        "Order an ECG and troponin.",
        "ECG within 10 minutes, serial troponins.",
        "medcalc",
        node(taxonomy, "Treatment planning QA").pk,
        {"source": "ward 3", "difficulty": 2},
    )
    assert item_state(items["2"]) == (
        "2",
        "model-b",
        "Dose of amoxicillin for otitis media in a child?",
        "",
        "",
        "",
        None,
        {},
    )
    assert item_state(items["case-003"])[2:4] == ("  Keep my spaces  ", "Ünïcödé answer ✓")
    # A subcategory name files the item under the subcategory.
    assert items["case-003"].taxonomy_node_id == node(taxonomy, "Planning Treatments").pk
    # The upload is kept under MEDIA_ROOT/imports/ (no temp file left behind) until the job's
    # transaction commits (this test's never does; test_upload_cleanup.py sees it go).
    stored = media_root / job.source_path
    assert stored.read_bytes() == (DATA / "items.jsonl").read_bytes()
    assert [p.name for p in stored.parent.iterdir()] == [stored.name]
    assert job.source_path.startswith("imports/") and job.source_path.endswith(".jsonl")
    # The empty output of line 3 is a warning, not an error.
    progress = imports.import_progress(job)
    assert progress["errors"] == [] and progress["error_count"] == 0
    assert progress["warnings"] == [
        {
            "where": "line 3",
            "reason": "empty output (imported: a model that answered nothing is still rated)",
        }
    ]
    actions = list(AuditEvent.objects.filter(study=study).values_list("action", "after"))
    assert ("items.import", {"created": 3, "unchanged": 0}) in actions
    assert any(
        a == "import.start" and after["source_name"] == "items.jsonl" for a, after in actions
    )


def test_csv_import_saves_every_field(study, coordinator, taxonomy):
    job = start(study, coordinator, (DATA / "items.csv").read_bytes(), "csv", "items.csv")

    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    items = {i.external_id: i for i in Item.objects.filter(study=study)}
    assert item_state(items["case-101"]) == (
        "case-101",
        "model-a",
        "Line one\r\nline two, with a comma",
        "Answer 1",
        "Ref 1",
        "medi_qa",
        node(taxonomy, "Treatment planning QA").pk,
        {"arm": "B", "site": "Boston", "author": "dr_x"},
    )
    assert item_state(items["case-102"]) == (
        "case-102",
        "model-b",
        "Short input",
        'Answer with "quotes"',
        "",
        "",
        None,
        {},
    )


def test_helm_run_import_saves_every_field(study, coordinator):
    job = start(study, coordinator, pack_helm_run(HELM_RUN), "helm", "medi_qa:model=demo.zip")

    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert job.source_path.endswith(".zip")
    states = json.loads((HELM_RUN / "scenario_state.json").read_text())["request_states"]
    items = list(Item.objects.filter(study=study).order_by("external_id"))
    assert len(items) == len(states) == 4
    for item, state in zip(items, states, strict=True):
        assert item_state(item) == (
            f"medi_qa/{state['instance']['id']}",
            "demo_vendor/demo-model-7b",
            state["instance"]["input"]["text"],
            state["result"]["completions"][0]["text"],
            state["instance"]["references"][0]["output"]["text"],
            "medi_qa",
            None,
            {
                "helm_instance_id": state["instance"]["id"],
                "helm_run": "medi_qa:model=demo_vendor_demo-model-7b",
                "split": "test",
                # request.prompt before the input and its "Question:" prefix
                "prompt_context": "Answer the following consumer health question.",
            },
        )
    assert items[3].output_text == ""  # the empty completion is still an item
    assert imports.import_progress(job)["warnings"] == [
        {
            "where": "request_states",
            "reason": "context kept: the prompt's instructions and in-context examples "
            "(request.prompt before the input), shown to raters as a collapsed section: "
            "4 request states (first request_states[0])",
        },
        {
            "where": "request_states[3]",
            "reason": "empty completion (imported: a model that answered nothing is still rated)",
        },
        {
            # The test taxonomy holds one MedHELM category, not the one medi_qa is under.
            "where": "taxonomy",
            "reason": "not filed under the taxonomy (fixtures/medhelm_benchmarks.json): "
            "medi_qa (4 items: filed under 'Patient Communication and Education', which the "
            "study's taxonomy lacks). Give them a task column",
        },
    ]
