"""How a judge asks its server for a verdict-shaped reply: the structured-output modes.

OpenAI-compatible servers agree on chat completions but not on structured output: OpenAI,
vLLM and SGLang take `response_format: {"type": "json_schema", ...}`; llama-cpp-python's
server refuses that (HTTP 500) and wants `{"type": "json_object", "schema": ...}`; Ollama
takes a top-level `format` holding the schema; TGI a grammar (`{"type": "json", "value":
schema}`); some servers only plain JSON mode, or nothing (the prompt asks for JSON and the
verdict is parsed from the text). A judge stores one mode (Judge.structured_output); this
module says which modes a provider has, what each adds to the request, the order the
connection test tries them in, and whether a server's error names the mode. Pure Python.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

# The stored values (Judge.structured_output). "" is the provider's native mode.
NATIVE = ""
JSON_SCHEMA = "json_schema"
JSON_OBJECT_SCHEMA = "json_object_schema"
OLLAMA_FORMAT = "ollama_format"
TGI_GRAMMAR = "tgi_grammar"
JSON_OBJECT = "json_object"
TOOL = "tool"
PROMPT_ONLY = "none"

LABELS: dict[str, str] = {
    NATIVE: "Provider default (OpenAI-compatible: json_schema; Anthropic: forced tool call; "
    "local: grammar)",
    JSON_SCHEMA: 'response_format {"type": "json_schema"} (OpenAI, Azure, vLLM, SGLang)',
    JSON_OBJECT_SCHEMA: 'response_format {"type": "json_object", "schema": ...} '
    "(llama-cpp-python's server, llama.cpp)",
    OLLAMA_FORMAT: '"format": schema in the body (Ollama)',
    TGI_GRAMMAR: 'response_format {"type": "json", "value": schema} (TGI grammar)',
    JSON_OBJECT: 'response_format {"type": "json_object"}: any JSON, no schema',
    TOOL: "Forced record_verdict tool call (Anthropic)",
    PROMPT_ONLY: "None: the prompt asks for JSON, the verdict is parsed from the text",
}

# The modes of each provider, in the order the connection test tries them: constrained to
# the verdict schema first, then any JSON, then the prompt alone.
MODES_BY_PROVIDER: dict[str, tuple[str, ...]] = {
    "openai": (
        JSON_SCHEMA,
        JSON_OBJECT_SCHEMA,
        OLLAMA_FORMAT,
        TGI_GRAMMAR,
        JSON_OBJECT,
        PROMPT_ONLY,
    ),
    "anthropic": (TOOL, PROMPT_ONLY),
    "local": (),
    "imported": (),
}
NATIVE_MODE = {"openai": JSON_SCHEMA, "anthropic": TOOL}

# The modes whose reply is held to the verdict schema by the server.
SCHEMA_MODES = frozenset({JSON_SCHEMA, JSON_OBJECT_SCHEMA, OLLAMA_FORMAT, TGI_GRAMMAR, TOOL})

# Words a server's error names each mode's request by. A word of the request's own fields
# (response_format, format, tools) or of the constraint (json_schema, grammar).
_CONSTRAINT_WORDS = (r"json[_ ]schema", r"grammars?", r"structured[_ ]outputs?", r"guided_json")
_MODE_WORDS: dict[str, tuple[str, ...]] = {
    JSON_SCHEMA: ("response_format", *_CONSTRAINT_WORDS),
    JSON_OBJECT_SCHEMA: ("response_format", "json_object", *_CONSTRAINT_WORDS),
    OLLAMA_FORMAT: ("format", *_CONSTRAINT_WORDS),
    TGI_GRAMMAR: ("response_format", *_CONSTRAINT_WORDS),
    JSON_OBJECT: ("response_format", "json_object", r"json[_ ]mode"),
    TOOL: ("tools", "tool_choice", "tool_use"),
}
# Statuses that are never about the request's shape: auth, rate limits, timeouts, a gateway
# or an overloaded server.
_NOT_ABOUT_THE_REQUEST = frozenset({401, 403, 407, 408, 429, 502, 503, 504, 529})


def choices() -> list[tuple[str, str]]:
    """(value, label) of every mode, for the model field."""
    return list(LABELS.items())


def modes_for(provider: str) -> tuple[str, ...]:
    """The modes a provider's judge may store besides the native one ("")."""
    return MODES_BY_PROVIDER.get(provider, ())


def effective_mode(provider: str, mode: str) -> str:
    """The mode a request of this provider is built with: "" is the provider's native one."""
    return mode or NATIVE_MODE.get(provider, NATIVE)


def mode_problem(provider: str, mode: str) -> str | None:
    """Why a judge of `provider` cannot use `mode` (None: it can)."""
    if mode == NATIVE or mode in modes_for(provider):
        return None
    allowed = ", ".join(modes_for(provider)) or "only the provider default"
    return (
        f"The structured-output mode {mode!r} does not apply to provider {provider!r} "
        f"(allowed: {allowed})."
    )


def openai_format_fields(mode: str, schema: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The fields an OpenAI-compatible chat-completion body gets for `mode` (a resolved
    mode: not ""); `schema` is the verdict's JSON schema, `name` its name."""
    if mode == JSON_SCHEMA:
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": name, "strict": True, "schema": dict(schema)},
            }
        }
    if mode == JSON_OBJECT_SCHEMA:
        return {"response_format": {"type": "json_object", "schema": scores_as_enums(schema)}}
    if mode == OLLAMA_FORMAT:
        return {"format": dict(schema)}
    if mode == TGI_GRAMMAR:
        return {"response_format": {"type": "json", "value": dict(schema)}}
    if mode == JSON_OBJECT:
        return {"response_format": {"type": "json_object"}}
    if mode == PROMPT_ONLY:
        return {}
    raise ValueError(f"no OpenAI-compatible request for the structured-output mode {mode!r}")


def scores_as_enums(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict schema with each integer score's minimum..maximum written as the enum of
    those integers: the same verdicts, in the form llama.cpp's grammar converter enforces (it
    ignores minimum and maximum, and a small model then scores 0 on a 1-5 scale)."""
    out = copy.deepcopy(dict(schema))
    for criterion in (out.get("properties") or {}).values():
        score = ((criterion or {}).get("properties") or {}).get("score")
        if isinstance(score, dict) and {"minimum", "maximum"} <= set(score):
            low, high = score.pop("minimum"), score.pop("maximum")
            score["enum"] = list(range(int(low), int(high) + 1))
    return out


def names_the_mode(mode: str, *, status: int, message: str) -> bool:
    """Whether an error answer (HTTP `status`, the provider's own error `message`) says the
    server does not take the request's structured-output `mode` (a resolved mode)."""
    if status < 400 or status in _NOT_ABOUT_THE_REQUEST:
        return False
    words = _MODE_WORDS.get(mode, ())
    if not words or not message:
        return False
    pattern = r"(?<![A-Za-z0-9_])(?:" + "|".join(words) + r")(?![A-Za-z0-9_])"
    return re.search(pattern, message, re.IGNORECASE) is not None


def unsupported_hint(mode: str) -> str:
    """What the coordinator does about a server that refuses the judge's mode."""
    return (
        f"the server does not take this judge's structured-output mode {mode!r}; not "
        "retried. Run 'test connection' on the judge (admin, Judges; or manage.py "
        "test_judge <name> --save) or change its structured-output mode"
    )
