"""What a HELM model was shown before an instance's input: the prompt's instructions and
in-context examples, kept so that a rater can expand them on the rating page.

HELM's adapters build `request.prompt` as the adapter spec's instructions, then the train
instances (the in-context examples, max_train_instances of them), then the eval instance's
input and the output prefix. scenario_state.json keeps no separate copy of the train
instances, so the context is read from the prompt: everything before the instance's own
input text (its last occurrence, as an example may quote it). Where the input is not in the
prompt (a scenario that reformats it) the whole prompt is kept, so nothing is lost.

Blinding: HELM's prompts do not name the model (the adapter spec's instructions and the
scenario's instances are the same for every model of a run entry), but a scenario's text
might; a context that contains the request's model name is not kept, and counted. Nor is a
context that differs between the models of one instance (other instructions, another
few-shot block, other whitespace, a system prompt for one model): it would tell raters
which model is which, so ContextSurvey finds such instances across a run, or across the
runs of a suite, and no model's context of them is kept; they are counted and warned about
with an example, as the contexts naming the model are.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from annotation.imports.rows import ParsedImport, ParsedRow, RowError
from annotation.models import Item

# Why a context was not kept (or was kept whole), each counted in parsed.counts.
NAMES_MODEL = "context_names_model"
WHOLE_PROMPT = "context_whole_prompt"
DIFFERS_BY_MODEL = "context_differs_by_model"
KEPT = "context_kept"  # request states whose context is kept
DIFFERS_NOTE = (
    "context not kept: the prompt before the input differs between models for the same "
    "instance (raters could tell the models apart by it)"
)
_SHOWN_MODELS = 4
# Model-name parts shorter than this are too common to be a sign of the model ("gpt").
_MIN_NAME_PART = 4


@dataclass(frozen=True)
class PromptContext:
    text: str  # "" when there is none to keep
    note: str | None = None  # NAMES_MODEL, WHOLE_PROMPT or None


def prompt_context(
    *, prompt: Any, input_text: str, model: str, input_prefix: str = ""
) -> PromptContext:
    """The part of `prompt` (request.prompt) before the instance's input, stripped, without
    the adapter's `input_prefix` ("Question:") that introduces the input; see the module's
    docstring for a prompt without the input and a context naming the model."""
    if not isinstance(prompt, str) or not prompt.strip():
        return PromptContext("")
    at = prompt.rfind(input_text) if input_text.strip() else -1
    note = None
    if at < 0:
        text, note = prompt.strip(), WHOLE_PROMPT
    else:
        text = prompt[:at].rstrip()
        if input_prefix.strip() and text.endswith(input_prefix.strip()):
            text = text[: -len(input_prefix.strip())]
        text = text.strip()
    if not text:
        return PromptContext("")
    if names_model(text, model):
        return PromptContext("", NAMES_MODEL)
    return PromptContext(text, note)


def names_model(text: str, model: str) -> bool:
    """Whether `text` names `model` ("org/name"): the whole name or one of its parts (the
    organisation, the model's own name) of at least _MIN_NAME_PART characters, as a word in
    any case (so "meta" does not match "metastatic")."""
    pattern = _model_pattern(model)
    return pattern is not None and pattern.search(text) is not None


@lru_cache(maxsize=256)
def _model_pattern(model: str) -> re.Pattern[str] | None:
    """One pattern for every name of the model (a run has one model: compiled once)."""
    parts = sorted({p for p in (model, *model.split("/")) if len(p) >= _MIN_NAME_PART})
    if not parts:
        return None
    names = "|".join(re.escape(p) for p in parts)
    return re.compile(rf"(?<![\w-])(?:{names})(?![\w-])", re.IGNORECASE)


# --- one context for every model of an instance -------------------------------------------------

_Instance = tuple[str, str]  # (benchmark, HELM instance id)


def _instance(row: ParsedRow) -> _Instance:
    return (row.benchmark, str(row.metadata.get("helm_instance_id", row.external_id)))


def _digest(row: ParsedRow) -> bytes:
    text = row.metadata.get(Item.PROMPT_CONTEXT_KEY, "")
    return hashlib.blake2b(str(text).encode(), digest_size=16).digest()


@dataclass
class ContextSurvey:
    """The context each model was shown per instance, as digests: record every row of the
    runs imported together, then withhold the contexts of the instances where the models'
    contexts differ (a model without a context differs from one with)."""

    _seen: dict[_Instance, dict[bytes, str]] = field(default_factory=dict)
    differing: dict[_Instance, set[str]] = field(default_factory=dict)

    def record(self, rows: list[ParsedRow]) -> None:
        for row in rows:
            key = _instance(row)
            contexts = self._seen.setdefault(key, {})
            contexts.setdefault(_digest(row), row.model_name)
            if len(contexts) > 1:
                models = self.differing.setdefault(key, set(contexts.values()))
                models.add(row.model_name)

    def withhold(self, parsed: ParsedImport) -> None:
        """Drop the context of parsed's rows whose instance differs between models; count
        those instances in parsed.counts[DIFFERS_BY_MODEL] and warn once, with an example."""
        found: dict[_Instance, int] = {}
        for row in parsed.rows:
            key = _instance(row)
            if key in self.differing and Item.PROMPT_CONTEXT_KEY in row.metadata:
                del row.metadata[Item.PROMPT_CONTEXT_KEY]
                if "helm_completion_index" not in row.metadata:  # one per request state
                    parsed.counts[KEPT] = parsed.counts.get(KEPT, 0) - 1
                found.setdefault(key, row.order)
        if not found:
            return
        parsed.counts[DIFFERS_BY_MODEL] = parsed.counts.get(DIFFERS_BY_MODEL, 0) + len(found)
        if not parsed.counts.get(KEPT, 1):
            del parsed.counts[KEPT]
        (benchmark, instance), order = next(iter(found.items()))
        models = sorted(self.differing[(benchmark, instance)])
        shown = ", ".join(models[:_SHOWN_MODELS]) + (", ..." if len(models) > _SHOWN_MODELS else "")
        where = f"{benchmark}/{instance}" if benchmark else instance
        count = f"{len(found)} instance{'s' if len(found) > 1 else ''}"
        reason = f"{DIFFERS_NOTE}: {count} (first {where}, between models {shown})"
        parsed.warnings.append(RowError("request_states", reason, order))
        parsed.warnings.sort(key=lambda w: w.order)


def withhold_differing_contexts(parsed: ParsedImport) -> None:
    """Within one run: withhold the contexts that differ between its models (ContextSurvey)."""
    survey = ContextSurvey()
    survey.record(parsed.rows)
    survey.withhold(parsed)
