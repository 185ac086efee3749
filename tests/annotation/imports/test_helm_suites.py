"""HELM suites (annotation/imports/suite.py, suite_jobs.py) against real HELM output: a suite
made by crfm-helm's helm-run (tests/support/helm_runs.py) imported as a folder from the
command line and as a zip from the service and the page, every item checked field by field
against the run's JSON, read here independently of the importer."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.imports import RowError, import_progress, parse_helm_run, suite_jobs
from annotation.models import ImportJob, Item
from jury.models import JudgeScore
from tests.annotation.imports.factories import start
from tests.support.helm_runs import MODEL, SECOND_MODEL, make_helm_suite, register_second_model

RUNS = (
    "simple1:model=simple_model1",
    "simple_classification:model=simple_model1",
    "simple_mcqa:model=simple_model1",
)


def expected_items(suite: Path) -> dict[tuple[str, str], dict]:
    """What every item of the suite must hold, from the JSON: a state per instance (train
    trial 0, not perturbed, request succeeded); for multiple choice the options in the input
    and "letter. text" answers."""
    expected = {}
    for run in RUNS:
        spec = json.loads((suite / run / "run_spec.json").read_text())
        benchmark = spec["name"].split(":")[0]
        states = json.loads((suite / run / "scenario_state.json").read_text())["request_states"]
        for state in states:
            if state["train_trial_index"] or state["instance"].get("perturbation"):
                continue
            instance = state["instance"]
            correct = [r for r in instance["references"] if "correct" in r["tags"]]
            reference = correct[0]["output"]["text"]
            question = instance["input"]["text"]
            output = state["result"]["completions"][0]["text"]
            mapping = state.get("output_mapping")
            if mapping:
                letters = {text: letter for letter, text in mapping.items()}
                options = "\n".join(f"{k}. {v}" for k, v in mapping.items())
                question = f"{question}\n\n{options}"
                letter = output.strip().rstrip(".)").strip()
                output = f"{letter}. {mapping[letter]}" if letter in mapping else output
                reference = f"{letters[reference]}. {reference}"
            key = (f"{benchmark}/{instance['id']}", state["request"]["model"])
            expected[key] = {
                "benchmark": benchmark,
                "input_text": question,
                "output_text": output,
                "reference_text": reference,
                "helm_run": spec["name"],
            }
    return expected


def assert_items_match(study, suite: Path) -> None:
    expected = expected_items(suite)
    items = {(i.external_id, i.model_name): i for i in Item.objects.filter(study=study)}
    assert set(items) == set(expected)
    mismatches = [
        (key, field)
        for key, want in expected.items()
        for field in ("benchmark", "input_text", "output_text", "reference_text")
        if getattr(items[key], field) != want[field]
    ] + [
        (key, "metadata")
        for key, want in expected.items()
        if items[key].metadata["helm_run"] != want["helm_run"]
        or items[key].metadata["helm_instance_id"] != key[0].split("/", 1)[1]
    ]
    assert mismatches == []


def zip_folder(folder: Path) -> bytes:
    """A zip of every file under `folder`, as a coordinator would make it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, f"{folder.name}/{path.relative_to(folder)}")
    return buffer.getvalue()


def state_count(suite: Path, run: str, test) -> int:
    states = json.loads((suite / run / "scenario_state.json").read_text())["request_states"]
    return sum(1 for s in states if test(s))


def test_the_command_imports_a_suite_folder_run_by_run(study, helm_suite):
    out = io.StringIO()

    call_command("import_items", str(helm_suite), study=study.pk, file_format="helm", stdout=out)

    assert_items_match(study, helm_suite)
    job = ImportJob.objects.get(study=study)
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert (job.runs_total, job.runs_checked, job.runs_done) == (3, 3, 3)
    summaries = {s["run"]: s for s in job.run_summaries}
    assert set(summaries) == set(RUNS)
    assert all(s["status"] == "imported" for s in summaries.values())
    assert (
        job.created_items == sum(s["created"] for s in summaries.values()) == Item.objects.count()
    )
    text = out.getvalue()
    for run in RUNS:
        assert f"run {run}: imported" in text
    # What was not imported is counted, from the JSON: simple1 has three train trials and
    # three completions per request; simple_mcqa is multiple choice.
    simple1 = summaries["simple1:model=simple_model1"]["counts"]
    later = state_count(helm_suite, RUNS[0], lambda s: s["train_trial_index"] > 0)
    first = state_count(helm_suite, RUNS[0], lambda s: s["train_trial_index"] == 0)
    extra = sum(
        len(s["result"]["completions"]) - 1
        for s in json.loads((helm_suite / RUNS[0] / "scenario_state.json").read_text())[
            "request_states"
        ]
        if s["train_trial_index"] == 0
    )
    assert later > 0 and extra > 0
    assert simple1["later_train_trials"] == later
    assert simple1["extra_completions_dropped"] == extra
    assert summaries[RUNS[0]]["items"] == first
    mcqa = summaries["simple_mcqa:model=simple_model1"]["counts"]
    assert mcqa["multiple_choice"] == state_count(helm_suite, RUNS[2], lambda s: True)
    assert f"later_train_trials {later}" in text and f"extra_completions_dropped {extra}" in text


def test_a_suite_zip_imports_every_run_and_again_changes_nothing(study, coordinator, helm_suite):
    data = zip_folder(helm_suite)
    seen = []

    job = start(
        study,
        coordinator,
        data,
        file_format="auto",
        name="tests.zip",
        on_progress=lambda j: seen.append((j.runs_checked, j.runs_done)),
    )

    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert_items_match(study, helm_suite)
    count = Item.objects.filter(study=study).count()
    assert job.created_items == count > 0
    # Progress per run: every run checked, then every run saved ("refuse" is the default).
    assert seen[-1] == (3, 3)
    assert [(c, d) for c, d in seen if d == 0][-1] == (3, 0)
    assert seen == sorted(seen)

    again = start(study, coordinator, data, file_format="helm", name="tests.zip")

    assert again.status == ImportJob.Status.SUCCEEDED, again.errors
    assert (again.created_items, again.unchanged_items) == (0, count)
    assert Item.objects.filter(study=study).count() == count


@pytest.fixture
def broken_suite(helm_suite, tmp_path):
    """The real suite with the multiple-choice run's scenario_state.json cut short."""
    copy = tmp_path / "tests"
    shutil.copytree(helm_suite, copy)
    state = copy / RUNS[2] / "scenario_state.json"
    state.write_bytes(state.read_bytes()[:200])
    return copy


def test_a_bad_run_refuses_the_whole_suite_by_default(study, broken_suite):
    with pytest.raises(CommandError, match="nothing was saved"):
        call_command(
            "import_items",
            str(broken_suite),
            study=study.pk,
            file_format="helm",
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )

    assert not Item.objects.exists()
    job = ImportJob.objects.get(study=study)
    assert job.status == ImportJob.Status.FAILED
    assert job.errors[0]["where"] == "suite"
    assert f"1 of 3 runs are bad ({RUNS[2]})" in job.errors[0]["reason"]
    assert any(
        e["where"] == f"{RUNS[2]}: scenario_state.json" and "not valid JSON" in e["reason"]
        for e in job.errors
    )
    statuses = {s["run"]: s["status"] for s in job.run_summaries}
    assert statuses[RUNS[2]] == "refused"


def test_a_bad_run_is_skipped_and_named_when_the_coordinator_chooses(study, broken_suite):
    out = io.StringIO()

    call_command(
        "import_items",
        str(broken_suite),
        study=study.pk,
        file_format="helm",
        on_bad_run="skip",
        stdout=out,
    )

    job = ImportJob.objects.get(study=study)
    assert job.status == ImportJob.Status.SUCCEEDED
    statuses = {s["run"]: s["status"] for s in job.run_summaries}
    assert statuses == {RUNS[0]: "imported", RUNS[1]: "imported", RUNS[2]: "skipped"}
    assert set(Item.objects.values_list("benchmark", flat=True)) == {
        "simple1",
        "simple_classification",
    }
    skipped = [w for w in job.errors if w["where"] == RUNS[2]]
    assert len(skipped) == 1 and "run skipped" in skipped[0]["reason"]
    assert "not valid JSON" in skipped[0]["reason"]
    assert f"run {RUNS[2]}: skipped" in out.getvalue()


def test_a_folder_of_neither_a_run_nor_runs_names_what_was_expected(study, tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("x")

    with pytest.raises(CommandError) as exc:
        call_command(
            "import_items",
            str(tmp_path),
            study=study.pk,
            file_format="helm",
        )

    message = str(exc.value)
    assert "holds neither a HELM run nor a suite" in message
    assert "scenario_state.json" in message and "benchmark_output/runs/<suite>/" in message
    assert not ImportJob.objects.exists()


def test_the_page_imports_a_suite_zip_and_shows_each_run(study, coordinator, client, helm_suite):
    client.force_login(coordinator)
    url = reverse("annotation:import", args=[study.pk])
    upload = io.BytesIO(zip_folder(helm_suite))
    upload.name = "tests.zip"

    response = client.post(
        url, {"file_format": "auto", "file": upload, "on_bad_run": "skip"}, follow=True
    )

    assert response.status_code == 200
    job = ImportJob.objects.get(study=study)
    assert job.on_bad_run == "skip"
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    page = response.content.decode()
    assert 'data-testid="import-runs"' in page
    for run in RUNS:
        assert run in page
    assert_items_match(study, helm_suite)


def test_the_steps_after_a_suite_import_read_it_run_by_run(
    study, coordinator, helm_suite, media_root, django_capture_on_commit_callbacks
):
    """The jury's verdict step reads each imported run of the suite (these runs carry no
    annotations, so it adds nothing) and leaves the job succeeded; then the upload goes."""
    with django_capture_on_commit_callbacks(execute=True):
        job = start(study, coordinator, zip_folder(helm_suite), file_format="helm", name="t.zip")

    job.refresh_from_db()
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert not [e for e in job.errors if "step" in e]
    assert job.source_path and not (media_root / job.source_path).exists()


def test_a_multiple_choice_item_shows_its_options_and_the_letters_meaning(study, helm_suite):
    call_command(
        "import_items", str(helm_suite), study=study.pk, file_format="helm", stdout=io.StringIO()
    )

    item = Item.objects.filter(benchmark="simple_mcqa").order_by("external_id").first()
    mapping = item.metadata["helm_output_mapping"]
    assert mapping == {"A": "Even", "B": "Odd"}
    assert item.input_text.endswith("\n\nA. Even\nB. Odd")
    assert item.reference_text in ("A. Even", "B. Odd")
    # simple/model1 answers "Answer:", none of the letters: kept as written, and counted.
    assert item.output_text == item.metadata["helm_completion"]
    job = ImportJob.objects.get(study=study)
    [mcqa] = [s for s in job.run_summaries if s["run"] == RUNS[2]]
    unmapped = sum(
        1
        for i in Item.objects.filter(benchmark="simple_mcqa")
        if i.metadata["helm_completion"].strip().rstrip(".)").strip() not in mapping
    )
    assert mcqa["counts"]["multiple_choice_unmapped"] == unmapped > 0


def test_a_letter_answer_is_shown_as_its_option(helm_suite, tmp_path):
    """The real multiple-choice run with its completions replaced by letters (simple/model1
    never answers with one): the output becomes "letter. option"."""
    run = tmp_path / RUNS[2]
    shutil.copytree(helm_suite / RUNS[2], run)
    state = json.loads((run / "scenario_state.json").read_text())
    for request_state, letter in zip(state["request_states"], "BA B.", strict=False):
        request_state["result"]["completions"][0]["text"] = f" {letter}"
    (run / "scenario_state.json").write_text(json.dumps(state))

    parsed = parse_helm_run(run)

    assert parsed.errors == []
    assert [row.output_text for row in parsed.rows[:4]] == ["B. Odd", "A. Even", "  ", "B. Odd"]
    assert parsed.counts["multiple_choice_unmapped"] == len(parsed.rows) - 3


def test_each_completion_can_be_its_own_item(study, helm_suite):
    """simple1 asks for three completions per request: with --completions each, every one
    is an item (the second and later under "#2", "#3"), and the summary counts them."""
    out = io.StringIO()

    call_command(
        "import_items",
        str(helm_suite / RUNS[0]),
        study=study.pk,
        file_format="helm",
        completions="each",
        stdout=out,
    )

    states = json.loads((helm_suite / RUNS[0] / "scenario_state.json").read_text())
    wanted = {}
    for state in states["request_states"]:
        if state["train_trial_index"]:
            continue
        base = f"simple1/{state['instance']['id']}"
        for k, completion in enumerate(state["result"]["completions"]):
            wanted[base if k == 0 else f"{base}#{k + 1}"] = completion["text"]
    items = dict(Item.objects.filter(study=study).values_list("external_id", "output_text"))
    assert items == wanted
    assert len(wanted) > len({key.split("#")[0] for key in wanted})
    job = ImportJob.objects.get(study=study)
    assert job.helm_completions == "each"
    extra = len(wanted) - len({key.split("#")[0] for key in wanted})
    assert any(f"{extra} more completions imported as items" in e["reason"] for e in job.errors)


def test_a_conflict_met_while_saving_names_the_run_and_the_runs_kept(
    study, coordinator, helm_suite, monkeypatch
):
    """ "refuse" checks every run first; items someone else imports between the check and
    the save of a run stop the job there, and the page says which runs stay imported."""
    calls = []

    def late_on_second_run(study, parsed, *, known):
        calls.append(1)
        return [RowError("request_states[0]", "imported meanwhile with other texts", 0)] * (
            len(calls) == 2
        )

    monkeypatch.setattr(suite_jobs, "late_conflicts", late_on_second_run)

    job = start(study, coordinator, zip_folder(helm_suite), file_format="helm", name="t.zip")

    assert job.status == ImportJob.Status.FAILED
    assert job.runs_done == 1
    assert [s["status"] for s in job.run_summaries] == ["imported", "failed", "checked"]
    assert set(Item.objects.values_list("benchmark", flat=True)) == {"simple1"}
    assert job.errors[0]["where"] == "suite"
    assert f"run {RUNS[1]} conflicts" in job.errors[0]["reason"]
    assert f"stay imported ({RUNS[0]})" in job.errors[0]["reason"]
    progress = import_progress(job)
    assert progress["failed"] and progress["created"] == Item.objects.count()


def test_each_item_keeps_its_prompts_instructions_and_in_context_examples(study, helm_suite):
    """Read from the JSON here: the context is the prompt up to the instance's own input block
    (input_prefix + input), holds the adapter spec's instructions and one input block per
    in-context example (max_train_instances of them), and the summary counts it."""
    call_command("import_items", str(helm_suite), study=study.pk, file_format="helm")
    job = ImportJob.objects.get(study=study)
    summaries = {s["run"]: s for s in job.run_summaries}
    items = {(i.external_id, i.model_name): i for i in Item.objects.filter(study=study)}
    checked = 0
    for run in RUNS:
        state = json.loads((helm_suite / run / "scenario_state.json").read_text())
        adapter = state["adapter_spec"]
        instructions, prefix = adapter["instructions"].strip(), adapter["input_prefix"].strip()
        assert adapter["max_train_instances"] > 0  # the simple scenarios have train instances
        benchmark = run.split(":")[0]
        for request_state in state["request_states"]:
            if request_state["train_trial_index"]:
                continue
            item = items[(f"{benchmark}/{request_state['instance']['id']}", MODEL)]
            prompt = request_state["request"]["prompt"]
            block = request_state["instance"]["input"]["text"]
            own = prompt.rindex(block)
            context = item.metadata[Item.PROMPT_CONTEXT_KEY]
            assert prompt.startswith(context)
            assert prompt[len(context) : own].strip() == prefix  # only the prefix in between
            assert context.startswith(instructions)
            if prefix:  # one input block per in-context example
                shown = context.count(prefix) - instructions.count(prefix)
                assert shown == adapter["max_train_instances"], run
            checked += 1
        assert summaries[run]["counts"]["context_kept"] == summaries[run]["items"]
    assert checked == len(items)


@pytest.fixture(scope="module")
def jury_suite(tmp_path_factory):
    """Two models (HELM's simple client registered a second time through prod_env) on the
    multiple-choice and a generation scenario, and a run annotated by HELM's own
    LLMAsJuryAnnotator with two simple judges (tests/support/helm_jury_plugin.py). simple1
    names its model deployment in its run spec, so only simple/model1 can run it."""
    workdir = tmp_path_factory.mktemp("helm-jury")
    register_second_model(workdir)
    entries = (
        *(
            f"{scenario}:model={model}"
            for scenario in ("simple_classification", "simple_mcqa")
            for model in (MODEL, SECOND_MODEL)
        ),
        f"simple_jury:model={MODEL}",
    )
    return make_helm_suite(workdir, entries, suite_name="two", jury_plugin=True)


@pytest.mark.parametrize("way", ["command", "page"])
def test_a_suite_of_two_models_and_a_jury_run_imports_in_one_step(
    way, study, coordinator, client, jury_suite, django_capture_on_commit_callbacks
):
    suite = jury_suite
    with django_capture_on_commit_callbacks(execute=True):  # the verdict step, after commit
        if way == "command":
            call_command("import_items", str(suite), study=study.pk, file_format="helm")
        else:
            client.force_login(coordinator)
            upload = io.BytesIO(zip_folder(suite))
            upload.name = "two.zip"
            url = reverse("annotation:import", args=[study.pk])
            response = client.post(url, {"file_format": "auto", "file": upload}, follow=True)
            assert response.status_code == 200
            page = response.content.decode()
            assert "simple_jury:model=simple_model1" in page and "simple_tutorial" in page

    job = ImportJob.objects.get(study=study)
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert [s["status"] for s in job.run_summaries] == ["imported"] * 5
    states = {
        run.name: [
            s
            for s in json.loads((run / "scenario_state.json").read_text())["request_states"]
            if not s["train_trial_index"]
        ]
        for run in suite.iterdir()
        if (run / "scenario_state.json").is_file()
    }
    for model in (MODEL, SECOND_MODEL):
        want = sum(len(v) for k, v in states.items() if k.endswith(model.replace("/", "_")))
        assert Item.objects.filter(study=study, model_name=model).count() == want > 0
    assert job.created_items == Item.objects.filter(study=study).count()
    # The jury run's verdicts, attached to its items as judges helm:<key>, as HELM parsed them.
    jury_states = states["simple_jury:model=simple_model1"]
    verdicts = {
        (f"simple_jury/{s['instance']['id']}", judge): s["annotations"]["simple_jury"][judge]
        for s in jury_states
        for judge in ("judge_one", "judge_two")
    }
    stored = {
        (score.item.external_id, score.judge.name.removeprefix("helm:")): score
        for score in JudgeScore.objects.filter(item__study=study).select_related(
            "item", "judge", "criterion"
        )
    }
    assert set(stored) == set(verdicts)
    assert all(
        stored[key].value == verdict["accuracy"]["score"]
        and stored[key].criterion.key == "accuracy"
        for key, verdict in verdicts.items()
    )
