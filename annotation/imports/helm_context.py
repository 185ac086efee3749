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
might; a context that contains the request's model name is not kept, and counted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# Why a context was not kept (or was kept whole), each counted in parsed.counts.
NAMES_MODEL = "context_names_model"
WHOLE_PROMPT = "context_whole_prompt"
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
