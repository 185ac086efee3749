"""HELM runs: a run directory, a zip of one, or scenario_state.json itself (path, bytes or
a binary stream).

read_helm_run reads a run's files once into a HelmRun (its request states, run spec and
name); helm_rows turns that into item rows, and the jury reads its verdicts from the same
HelmRun, so that both see the run alike. A zip is read through archive.UploadZip, under the
import limits.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotation.imports import helm_context
from annotation.imports.helm_choices import output_mapping, read_choice
from annotation.imports.helm_files import HelmSource, helm_files, load_json
from annotation.imports.rows import (
    ParsedImport,
    RowError,
    clean_row,
    type_name,
)
from annotation.models import Item

# Request states skipped or read unusually, each reported once with a count.
_SKIPPED_TRIAL = "skipped: train trials after the first (train_trial_index > 0)"
_SKIPPED_PERTURBED = "skipped: perturbed instances (instance.perturbation)"
_OTHER_REFERENCE = "reference taken from the first reference tagged 'correct', not references[0]"
_EXTRA_COMPLETIONS = "only the first completion kept (num_outputs > 1): the others are not imported"
_EACH_COMPLETION = (
    "each completion imported as its own item (num_outputs > 1): the second and later under "
    "external ids ending in #2, #3, ..."
)
_UNMAPPED = (
    "multiple choice: the completion is none of the option letters of output_mapping, "
    "kept as the model wrote it"
)
_MULTIPLE_CHOICE = (
    "multiple choice: the options (output_mapping) added to the input, the chosen and the "
    "correct option shown as 'letter. text'"
)
_CONTEXT_KEPT = (
    "context kept: the prompt's instructions and in-context examples (request.prompt before "
    "the input), shown to raters as a collapsed section"
)
_CONTEXT_WHOLE = (
    "context: the input is not in request.prompt, so the whole prompt is kept as the context"
)
_CONTEXT_NAMES_MODEL = (
    "context not kept: the prompt before the input names the model (raters must not see it)"
)
# parsed.counts keys, for the import summary.
COUNT_KEYS = {
    _SKIPPED_TRIAL: "later_train_trials",
    _SKIPPED_PERTURBED: "perturbed_instances",
    _OTHER_REFERENCE: "reference_not_first",
    _EXTRA_COMPLETIONS: "extra_completions_dropped",
    _EACH_COMPLETION: "extra_completions_imported",
    _UNMAPPED: "multiple_choice_unmapped",
    _MULTIPLE_CHOICE: "multiple_choice",
    _CONTEXT_KEPT: helm_context.KEPT,
    _CONTEXT_WHOLE: helm_context.WHOLE_PROMPT,
    _CONTEXT_NAMES_MODEL: helm_context.NAMES_MODEL,
}
_CONTEXT_NOTES = {
    helm_context.WHOLE_PROMPT: _CONTEXT_WHOLE,
    helm_context.NAMES_MODEL: _CONTEXT_NAMES_MODEL,
}
FAILED_REQUESTS = "failed_requests"
# What to import of a request with several completions (num_outputs > 1).
FIRST, EACH = "first", "each"
COMPLETIONS = (FIRST, EACH)


@dataclass(frozen=True)
class HelmRun:
    """A run as read from its files. `request_states` is None when the run cannot be read;
    `problems` are the file-level errors met (order -1), a bad run_spec.json among them."""

    request_states: list[Any] | None
    run_spec: Any = None
    run_name: str = ""
    problems: tuple[RowError, ...] = ()
    adapter_spec: Any = None  # scenario_state.json's, for the prompt's input_prefix

    @property
    def label(self) -> str:
        """The run's name as items record it: run_spec "name", else the directory name."""
        name = self.run_spec.get("name") if isinstance(self.run_spec, dict) else None
        return name if isinstance(name, str) else self.run_name


def read_helm_run(source: HelmSource, *, name_hint: str = "", label: str = "") -> HelmRun:
    """Read a run's scenario_state.json and run_spec.json. `name_hint` names the run when
    the source does not (e.g. the uploaded file's stem); `label` names the file in the
    problems of a zip (default: the zip)."""
    if name_hint in ("scenario_state", "scenario_state.json"):
        name_hint = ""
    files = helm_files(source, name_hint, label)
    if files.error or files.scenario_state is None:
        problem = RowError("file", files.error or "no scenario_state.json", -1)
        return HelmRun(None, problems=(problem,))
    return run_from_files(
        scenario_state=files.scenario_state, run_spec=files.run_spec, run_name=files.run_name
    )


def run_from_files(*, scenario_state: bytes, run_spec: bytes | None, run_name: str) -> HelmRun:
    """A run from the bytes of its scenario_state.json and run_spec.json (None: absent)."""
    problems: list[RowError] = []
    spec = None
    if run_spec is not None:
        spec, problem = load_json(run_spec, "run_spec.json")
        if problem:
            problems.append(RowError("run_spec.json", problem, -1))
    state, problem = load_json(scenario_state, "scenario_state.json")
    states = _dig(state, "request_states")
    if not problem and not isinstance(states, list):
        problem = "'request_states' must be a list"
    if problem:
        problems.append(RowError("scenario_state.json", problem, -1))
        states = None
    return HelmRun(states, spec, run_name, tuple(problems), _dig(state, "adapter_spec"))


def parse_helm_run(
    source: HelmSource, *, name_hint: str = "", label: str = "", completions: str = FIRST
) -> ParsedImport:
    """Item rows of a HELM run; see read_helm_run and helm_rows."""
    run = read_helm_run(source, name_hint=name_hint, label=label)
    return helm_rows(run, completions=completions)


def helm_rows(run: HelmRun, *, completions: str = FIRST) -> ParsedImport:
    """One row per request state: instance.id, instance.input.text, the reference,
    result.completions[0].text and request.model, and as context (metadata
    Item.PROMPT_CONTEXT_KEY, see helm_context) request.prompt before the input, i.e. the
    instructions and in-context examples; other keys are ignored.

    external_id is "<benchmark>/<instance.id>" (HELM numbers every scenario's instances id0,
    id1, ..., so two benchmarks in a study would collide on bare ids). An empty completion is
    imported with a warning; a failed request is skipped with one (there is nothing to rate);
    later train trials and perturbed instances repeat an instance and are skipped. Each of
    these is counted in parsed.counts (COUNT_KEYS, FAILED_REQUESTS) and warned about once.
    Of several completions (num_outputs > 1) the first is kept and the others counted as
    dropped, or, with completions="each", each is an item of its own (the second and later
    under "<external_id>#2", ...). A multiple-choice state (output_mapping) is read by helm_choices.
    """
    parsed = ParsedImport(errors=list(run.problems))
    if run.request_states is None:
        return parsed
    benchmark = helm_benchmark_name(run_spec=run.run_spec, run_name=run.run_name)
    if not benchmark:
        reason = (
            "no run name (run_spec.json or the run directory's name), so no benchmark: "
            "external ids are the bare instance ids; upload the run directory as a zip"
        )
        parsed.warnings.append(RowError("file", reason, -1))
    if completions not in COMPLETIONS:
        raise ValueError(f"completions must be one of {COMPLETIONS}, not {completions!r}")
    input_prefix = _dig(run.adapter_spec, "input_prefix")
    reader = _StateReader(
        benchmark=benchmark,
        input_prefix=input_prefix if isinstance(input_prefix, str) else "",
        run_label=run.label,
        parsed=parsed,
        each_completion=completions == EACH,
    )
    for index, request_state in enumerate(run.request_states):
        reader.read(index, request_state)
    reader.warn_noted()
    parsed.warnings.sort(key=lambda w: w.order)
    helm_context.withhold_differing_contexts(parsed)
    return parsed


def helm_benchmark_name(*, run_spec: Any, run_name: str) -> str:
    """The benchmark of a HELM run: run_spec "name" up to the first ':' (e.g. "medi_qa"),
    else the run directory's name up to ':'."""
    name = run_spec.get("name") if isinstance(run_spec, dict) else None
    if not isinstance(name, str) or not name.strip():
        name = run_name
    return name.split(":", 1)[0].strip()


def pack_helm_run(path: str | Path) -> bytes:
    """A zip of a HELM run directory's scenario_state.json and run_spec.json, under the
    directory's name, so that a run can be stored and imported as one file. `path` may be
    the directory or its scenario_state.json."""
    path = Path(path)
    folder = path.parent if path.is_file() else path
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in ("scenario_state.json", "run_spec.json"):
            if (folder / name).is_file():
                archive.write(folder / name, f"{folder.name}/{name}")
    return buffer.getvalue()


# --- one request state -------------------------------------------------------------------------


@dataclass
class _StateReader:
    """Reads request states into the rows of `parsed`; notes the states skipped or read
    unusually, to report each kind once with a count."""

    benchmark: str
    run_label: str
    parsed: ParsedImport
    input_prefix: str = ""
    noted: dict[str, list[int]] = field(default_factory=lambda: {key: [] for key in COUNT_KEYS})
    each_completion: bool = False
    extra_completions: int = 0

    def read(self, index: int, state: Any) -> None:
        self.parsed.total += 1
        where = f"request_states[{index}]"
        if not isinstance(state, dict):
            reason = f"expected an object, got {type_name(state)}"
            self.parsed.errors.append(RowError(where, reason, index))
        elif (note := _repeated_instance(state)) is not None:
            self.noted[note].append(index)
        elif (failure := _failed_request(state)) is not None:
            self.parsed.warnings.append(RowError(where, failure, index))
            self.parsed.counts[FAILED_REQUESTS] = self.parsed.counts.get(FAILED_REQUESTS, 0) + 1
        elif (items := self._fields(state, where, index)) is not None:
            for k, fields in enumerate(items):
                row = clean_row(
                    fields,
                    where=where if k == 0 else f"{where}.result.completions[{k}]",
                    order=index,
                    parsed=self.parsed,
                    empty_output="empty completion",
                )
                if row is not None:
                    self.parsed.rows.append(row)

    def warn_noted(self) -> None:
        for what, indices in self.noted.items():
            if indices:
                count = f"{len(indices)} request state{'s' if len(indices) > 1 else ''}"
                extra = what in (_EXTRA_COMPLETIONS, _EACH_COMPLETION)
                if extra:
                    verb = "dropped" if what == _EXTRA_COMPLETIONS else "imported as items"
                    count += f", {self.extra_completions} more completions {verb}"
                reason = f"{what}: {count} (first request_states[{indices[0]}])"
                self.parsed.warnings.append(RowError("request_states", reason, indices[0]))
                value = self.extra_completions if extra else len(indices)
                self.parsed.counts[COUNT_KEYS[what]] = value

    def _fields(self, state: dict[str, Any], where: str, index: int) -> list[dict[str, Any]] | None:
        """The fields of the state's items (one, or one per completion with
        each_completion), or None after reporting what the state lacks."""
        instance_id = _dig(state, "instance", "id")
        if isinstance(instance_id, str):
            instance_id = instance_id.strip()
        input_text = _dig(state, "instance", "input", "text")
        model = _dig(state, "request", "model")
        result = state.get("result")
        lacks = [
            reason
            for reason, ok in (
                ("missing instance.id", isinstance(instance_id, str) and instance_id),
                ("missing instance.input.text", isinstance(input_text, str)),
                ("missing request.model", isinstance(model, str)),
                ("missing result", isinstance(result, dict)),
            )
            if not ok
        ]
        if lacks:
            self.parsed.errors.extend(RowError(where, r, index) for r in lacks)
            return None
        completions = result.get("completions")
        texts = [
            text if isinstance(text := _dig(c, "text"), str) else ""
            for c in (completions if isinstance(completions, list) else [])
        ] or [""]  # no completion: as empty
        if len(texts) > 1:
            self.noted[_EACH_COMPLETION if self.each_completion else _EXTRA_COMPLETIONS].append(
                index
            )
            self.extra_completions += len(texts) - 1
            if not self.each_completion:
                texts = texts[:1]
        reference, ref_index = _reference(_dig(state, "instance", "references"))
        if ref_index:
            self.noted[_OTHER_REFERENCE].append(index)
        metadata: dict[str, Any] = {"helm_instance_id": instance_id, "helm_run": self.run_label}
        split = _dig(state, "instance", "split")
        if isinstance(split, str):
            metadata["split"] = split
        context = helm_context.prompt_context(
            prompt=_dig(state, "request", "prompt"),
            input_text=input_text,
            model=model,
            input_prefix=self.input_prefix,
        )
        if context.note is not None:
            self.noted[_CONTEXT_NOTES[context.note]].append(index)
        if context.text:
            self.noted[_CONTEXT_KEPT].append(index)
            metadata[Item.PROMPT_CONTEXT_KEY] = context.text
        mapping = output_mapping(state)
        if mapping is not None:
            self.noted[_MULTIPLE_CHOICE].append(index)
        external_id = f"{self.benchmark}/{instance_id}" if self.benchmark else instance_id
        items = []
        for k, text in enumerate(texts):
            item_meta = dict(metadata)
            question, output, gold = input_text, text, reference
            if mapping is not None:
                choice = read_choice(
                    mapping=mapping, question=input_text, completion=text, reference=reference
                )
                if not choice.mapped:
                    self.noted[_UNMAPPED].append(index)
                item_meta.update(helm_output_mapping=mapping, helm_completion=text)
                question, output, gold = (
                    choice.input_text,
                    choice.output_text,
                    choice.reference_text,
                )
            if k:
                item_meta["helm_completion_index"] = k
            items.append(
                {
                    "external_id": external_id if k == 0 else f"{external_id}#{k + 1}",
                    "input": question,
                    "output": output,
                    "model": model,
                    "reference": gold,
                    "benchmark": self.benchmark,
                    "metadata": item_meta,
                }
            )
        return items


def _repeated_instance(state: dict[str, Any]) -> str | None:
    """Why a state repeats an instance (a later train trial, a perturbation), or None."""
    trial = state.get("train_trial_index")
    if isinstance(trial, int) and trial > 0:
        return _SKIPPED_TRIAL
    if _dig(state, "instance", "perturbation"):
        return _SKIPPED_PERTURBED
    return None


def _failed_request(state: dict[str, Any]) -> str | None:
    """The warning for a request that failed (there is no answer to rate), or None."""
    result = state.get("result")
    if isinstance(result, dict) and result.get("success") is False:
        detail = result.get("error")
        return "skipped: the request failed" + (f" ({detail})" if detail else "")
    return None


def _reference(references: Any) -> tuple[str, int | None]:
    """The gold answer and its index: the first reference tagged "correct", else the first.

    In HELM's generation scenarios (all of MedHELM's open-ended ones) the first reference is
    the correct answer; in multiple-choice ones references are the options and only the
    correct one is tagged, so references[0] would show clinicians a wrong option.
    """
    if not isinstance(references, list) or not references:
        return "", None
    chosen = next(
        (
            i
            for i, ref in enumerate(references)
            if isinstance(ref, dict) and "correct" in (ref.get("tags") or [])
        ),
        0,
    )
    ref_text = _dig(references, chosen, "output", "text")
    return (ref_text if isinstance(ref_text, str) else ""), chosen


def _dig(obj: Any, *path: str | int) -> Any:
    """obj[path[0]][path[1]]..., or None where a step is missing or of the wrong type."""
    for step in path:
        if isinstance(step, int):
            if not isinstance(obj, list) or len(obj) <= step:
                return None
        elif not isinstance(obj, dict):
            return None
        obj = obj[step] if isinstance(step, int) else obj.get(step)
    return obj
