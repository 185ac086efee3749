"""A prompt context that differs between the models of one instance would tell raters which
model is which: at import it is kept for none of them, counted and warned about with an
example, as a context naming the model is (helm_context.ContextSurvey)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.imports import parse_helm_run
from annotation.models import ImportJob, Item
from tests.annotation.imports.factories import sample_prompt, sample_run, start, suite_zip

MODEL_A, MODEL_B = "vendor/model-a", "vendor/model-b"
FOLDER_A, FOLDER_B = (f"medi_qa:model={m.replace('/', '_')}" for m in (MODEL_A, MODEL_B))
INSTRUCTIONS = "Answer the following consumer health question."
# The other model's prompt of id102, each way a model's prompt may be formatted apart.
ALTERED = {
    "instructions": lambda p: p.replace(INSTRUCTIONS, "Answer the question below briefly."),
    "whitespace": lambda p: p.replace(INSTRUCTIONS, INSTRUCTIONS.replace(" ", "  ", 1)),
    "system prompt": lambda p: "You are a careful assistant.\n\n" + p,
    "few-shot block": lambda p: p.replace(
        "\n\nQuestion: Can", "\n\nQuestion: Is water wet?\nAnswer: Yes.\n\nQuestion: Can"
    ),
}
WARNING = "context not kept: the prompt before the input differs between models"


def context(study, instance: str, model: str) -> str | None:
    item = Item.objects.get(study=study, external_id=f"medi_qa/{instance}", model_name=model)
    return item.metadata.get(Item.PROMPT_CONTEXT_KEY)


def two_model_suite(alter) -> bytes:
    altered = {"id102": alter(sample_prompt("id102"))}
    return suite_zip(
        {FOLDER_A: sample_run(MODEL_A), FOLDER_B: sample_run(MODEL_B, prompts=altered)}
    )


def warnings_of(job: ImportJob) -> list[dict]:
    return [e for e in job.errors if e.get("level") == "warning"]


@pytest.mark.parametrize("alter", list(ALTERED.values()), ids=list(ALTERED))
def test_a_context_one_model_was_shown_differently_is_kept_for_no_model(study, coordinator, alter):
    job = start(study, coordinator, two_model_suite(alter), file_format="helm", name="two.zip")

    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert context(study, "id102", MODEL_A) is None
    assert context(study, "id102", MODEL_B) is None
    for instance in ("id101", "id103", "id104"):  # the same for both: kept
        assert context(study, instance, MODEL_A) == context(study, instance, MODEL_B)
        assert context(study, instance, MODEL_A) == INSTRUCTIONS
    # counted where the model-name guard's findings are: each run's summary and a warning
    for summary in job.run_summaries:
        assert summary["counts"]["context_differs_by_model"] == 1, summary
        assert summary["counts"]["context_kept"] == 3, summary
    found = [w for w in warnings_of(job) if WARNING in w["reason"]]
    assert len(found) == 2  # one per run
    for warning in found:
        assert "1 instance (first medi_qa/id102, between models " in warning["reason"]
        assert f"{MODEL_A}, {MODEL_B})" in warning["reason"]


def test_the_page_and_the_command_show_the_count_and_the_example(
    study, coordinator, client, tmp_path
):
    data = two_model_suite(ALTERED["instructions"])
    client.force_login(coordinator)
    upload = io.BytesIO(data)
    upload.name = "two.zip"
    url = reverse("annotation:import", args=[study.pk])

    page = client.post(url, {"file_format": "helm", "file": upload}, follow=True)

    body = page.content.decode()
    assert page.status_code == 200
    assert "context_differs_by_model: 1" in body
    assert "first medi_qa/id102, between models vendor/model-a, vendor/model-b" in body

    Item.objects.filter(study=study).delete()
    path = tmp_path / "two.zip"
    path.write_bytes(data)
    out = io.StringIO()
    call_command("import_items", str(path), study=study.pk, file_format="helm", stdout=out)
    text = out.getvalue()
    assert "context_differs_by_model 1" in text
    for folder in (FOLDER_A, FOLDER_B):
        assert f"warning {folder}: request_states: {WARNING}" in text


def test_the_same_context_for_every_model_is_kept_and_not_counted(study, coordinator):
    data = suite_zip({FOLDER_A: sample_run(MODEL_A), FOLDER_B: sample_run(MODEL_B)})

    job = start(study, coordinator, data, file_format="helm", name="two.zip")

    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert set(Item.objects.values_list("metadata__prompt_context", flat=True)) == {INSTRUCTIONS}
    assert not any(WARNING in w["reason"] for w in warnings_of(job))
    assert all("context_differs_by_model" not in s["counts"] for s in job.run_summaries)


def test_within_one_run_of_two_models_the_same_holds():
    """A scenario_state.json holding both models' request states (one run, two models)."""
    a = json.loads(sample_run(MODEL_A)["scenario_state.json"])
    altered = {"id103": ALTERED["system prompt"](sample_prompt("id103"))}
    b = json.loads(sample_run(MODEL_B, prompts=altered)["scenario_state.json"])
    a["request_states"] += b["request_states"]

    parsed = parse_helm_run(json.dumps(a).encode(), name_hint="medi_qa")

    contexts = {
        (row.external_id, row.model_name): row.metadata.get(Item.PROMPT_CONTEXT_KEY)
        for row in parsed.rows
    }
    assert contexts[("medi_qa/id103", MODEL_A)] is None
    assert contexts[("medi_qa/id103", MODEL_B)] is None
    assert contexts[("medi_qa/id101", MODEL_B)] == INSTRUCTIONS
    assert parsed.counts["context_differs_by_model"] == 1
    assert parsed.counts["context_kept"] == 6
    [warning] = [w for w in parsed.warnings if WARNING in w.reason]
    assert "first medi_qa/id103, between models vendor/model-a, vendor/model-b" in warning.reason
