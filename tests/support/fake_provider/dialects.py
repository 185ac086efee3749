"""The structured-output dialects the fake provider can speak on chat completions: what each
kind of OpenAI-compatible server accepts, refuses (with the error it sends) and holds the
reply to. The error texts are the servers' own wording, shortened.

- "openai" (OpenAI, vLLM, SGLang; the default): response_format json_schema or json_object;
  an unknown top-level field such as Ollama's "format" is refused with 400.
- "llama_cpp" (llama-cpp-python's server): response_format json_object, with an optional
  "schema"; any other type is a 500 from its request validation; "format" is ignored.
- "ollama": a top-level "format" (a JSON schema, or "json"); any response_format is refused.
- "tgi": response_format {"type": "json" | "json_object", "value": schema} (a grammar); a
  missing value or another type is a 422 from its deserializer; "format" is ignored.
- "json_object_only": response_format {"type": "json_object"} and nothing else.
- "prompt_only": no response_format at all; "format" is ignored.

A reply that no constraint held answers with the verdict only when the fake's model
`follows_prompt` (the prompt asks for the JSON), else with prose, as a small model does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DIALECTS = ("openai", "llama_cpp", "ollama", "tgi", "json_object_only", "prompt_only")


@dataclass(frozen=True)
class Constraint:
    """What a server makes of a request's structured-output fields."""

    error: tuple[int, dict[str, Any]] | None = None  # the server refuses: status, body
    schema: dict[str, Any] | None = None  # the reply is held to this schema
    json_only: bool = False  # the reply is held to JSON (any object)

    @property
    def held(self) -> bool:
        return self.schema is not None or self.json_only


def _error(status: int, message: str, kind: str = "invalid_request_error") -> Constraint:
    data = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return Constraint(error=(status, data))


def _schema(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def read_constraint(dialect: str, body: dict[str, Any]) -> Constraint:
    """The server's reading of the request `body` in `dialect`."""
    fmt = body.get("response_format")
    fmt = fmt if isinstance(fmt, dict) else None
    kind = fmt.get("type") if fmt else None
    if dialect == "openai":
        if "format" in body:
            return _error(400, "Unrecognized request argument supplied: format")
        if kind == "json_schema":
            return Constraint(schema=_schema((fmt.get("json_schema") or {}).get("schema")))
        if kind == "json_object":
            return Constraint(json_only=True)
        if fmt is not None and kind != "text":
            return _error(
                400,
                f"Invalid value: '{kind}'. Supported values are: "
                "'json_object', 'json_schema', and 'text'.",
            )
        return Constraint()
    if dialect == "llama_cpp":
        if fmt is not None and kind not in ("text", "json_object"):
            return _error(
                500,
                "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n"
                f"  Input should be 'text' or 'json_object' [type=literal_error, "
                f"input_value='{kind}', input_type=str]",
                "internal_server_error",
            )
        if kind == "json_object":
            schema = _schema(fmt.get("schema"))
            return Constraint(schema=schema, json_only=schema is None)
        return Constraint()
    if dialect == "ollama":
        if fmt is not None:
            return _error(400, "unsupported response_format, use format")
        value = body.get("format")
        if isinstance(value, dict):
            return Constraint(schema=value)
        return Constraint(json_only=value == "json")
    if dialect == "tgi":
        if fmt is None:
            return Constraint()
        if kind not in ("json", "json_object", "regex"):
            return _error(
                422,
                "Failed to deserialize the JSON body into the target type: response_format: "
                f"unknown variant `{kind}`, expected one of `json`, `json_object`, `regex`",
            )
        if "value" not in fmt:
            return _error(
                422,
                "Failed to deserialize the JSON body into the target type: response_format: "
                "missing field `value`",
            )
        return Constraint(schema=_schema(fmt["value"]))
    if dialect == "json_object_only":
        if fmt is None:
            return Constraint()
        if kind != "json_object" or set(fmt) != {"type"}:
            return _error(400, 'response_format: only {"type": "json_object"} is supported')
        return Constraint(json_only=True)
    if dialect == "prompt_only":
        if fmt is not None:
            return _error(400, "response_format is not supported by this server")
        return Constraint()
    raise ValueError(f"unknown dialect {dialect!r}; known: {DIALECTS}")
