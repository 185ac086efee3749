"""What the fake provider answers: the OpenAI chat-completion and Anthropic Messages bodies
for each scripted outcome, built from the request and the provider's settings."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tests.support.fake_provider.dialects import read_constraint

if TYPE_CHECKING:
    from tests.support.fake_provider.server import FakeProvider

OUTCOMES = (
    "ok",
    "429",
    "500",
    "503",
    "400",
    "401",
    "malformed",
    "truncated",
    "timeout",
    "echo",
    "refuse",
    "content_filter",
    "bad_verdict",
    "max_tokens",
    "max_tokens_whole",
)
# Outcomes of a reply cut at the request's max_tokens: "max_tokens" cuts the verdict in half,
# "max_tokens_whole" ends exactly at the limit with the verdict whole.
CUT_AT_MAX_TOKENS = ("max_tokens", "max_tokens_whole")
DEFAULT_CRITERIA = (("accuracy", 1, 5), ("completeness", 1, 5), ("clarity", 1, 5))
TOOL_NAME = "record_verdict"
# What a model that no constraint holds, and that does not follow the prompt, answers.
PROSE = "Sure! The response looks accurate and complete. I would rate it highly."

Criteria = list[tuple[str, int, int]]
VerdictFn = Callable[[str, Criteria], dict[str, Any]]

# The error outcomes: HTTP status, then the error type and message both protocols send.
ERRORS = {
    "429": (429, "rate_limit_error", "Rate limit reached for requests."),
    "500": (500, "api_error", "The server had an error while processing your request."),
    "503": (503, "overloaded_error", "The engine is currently overloaded."),
    "400": (400, "invalid_request_error", "Invalid value for 'temperature'."),
    "401": (401, "authentication_error", "Incorrect API key provided: "),
}


def prompt_key(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def hashed_verdict(prompt: str, criteria: Criteria) -> dict[str, Any]:
    """Deterministic scores: the same prompt always gets the same verdict."""
    verdict = {}
    for key, low, high in criteria:
        digest = hashlib.sha256(f"{key}\n{prompt}".encode()).hexdigest()
        verdict[key] = {
            "score": low + int(digest[:8], 16) % (high - low + 1),
            "explanation": f"Fake judge: {key} assessed.",
        }
    return verdict


@dataclass
class Exchange:
    """One request being answered: what `begin_exchange` decided, handed to `end_exchange` and `on_response`."""

    index: int
    outcome: str
    model: str
    prompt: str
    protocol: str
    extra: dict[str, Any] = field(default_factory=dict)  # for subclasses


@dataclass
class Reply:
    status: int
    payload: bytes
    headers: dict[str, str] = field(default_factory=dict)
    truncated: bool = False  # announce more bytes than sent, then close
    data: Any = None  # the decoded body of a protocol answer, for the `on_response` hook


def json_reply(status: int, data: Any, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, json.dumps(data).encode("utf-8"), dict(headers or {}), data=data)


def truncated_reply(data: Any) -> Reply:
    """A body cut in half under a Content-Length announcing all of it (a dropped connection)."""
    return Reply(200, json.dumps(data).encode("utf-8"), truncated=True)


def user_prompt(body: dict) -> str:
    messages = body.get("messages") or []
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def system_prompt(body: dict) -> str:
    system = body.get("system")
    if isinstance(system, str):
        return system
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "system":
            return str(message.get("content", ""))
    return ""


def tokens(text: str) -> int:
    return max(1, len(text) // 4)


def criteria_from_schema(schema: Any) -> Criteria | None:
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return None
    criteria = []
    for key, prop in schema["properties"].items():
        score = (prop.get("properties") or {}).get("score") or {}
        if "enum" in score:
            low, high = min(score["enum"]), max(score["enum"])
        else:
            low, high = score.get("minimum", 1), score.get("maximum", 5)
        criteria.append((key, int(low), int(high)))
    return criteria


def error_reply(fake: FakeProvider, exchange: Exchange, headers: dict) -> Reply | None:
    """The error response for an error outcome; None when the outcome is no error."""
    if exchange.outcome not in ERRORS:
        return None
    status, kind, message = ERRORS[exchange.outcome]
    if status == 401:  # quote the key received, as real providers echo a masked key
        key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        message += key
    extra = {"Retry-After": str(fake.retry_after_seconds)} if status == 429 else {}
    if exchange.protocol == "openai":
        data = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    else:
        data = {"type": "error", "error": {"type": kind, "message": message}}
    return json_reply(status, data, extra)


def verdict(fake: FakeProvider, prompt: str, criteria: Criteria, *, bad: bool) -> dict:
    scores = fake.verdict_fn(prompt, criteria)
    if bad and criteria:
        key, _low, high = criteria[0]
        scores[key] = {"score": high + 2, "explanation": "Out of scale."}
    return scores


def openai_reply(fake: FakeProvider, exchange: Exchange, body: dict, headers: dict) -> Reply:
    outcome, prompt = exchange.outcome, exchange.prompt
    error = error_reply(fake, exchange, headers)
    if error is not None:
        return error
    if outcome == "malformed":
        payload = b'{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [{"ind'
        return Reply(200, payload)
    constraint = read_constraint(fake.dialect, body)
    if constraint.error is not None:
        return json_reply(*constraint.error)
    criteria = criteria_from_schema(constraint.schema) or fake.default_criteria
    content: str | None
    refusal = None
    finish = "stop"
    if outcome == "ok" and not constraint.held and not fake.follows_prompt:
        content = PROSE
    elif outcome == "echo":
        content = prompt
    elif outcome == "refuse":
        content, refusal = None, "I'm sorry, I can't help with that."
    elif outcome == "content_filter":
        content, finish = None, "content_filter"
    else:
        content = json.dumps(verdict(fake, prompt, criteria, bad=outcome == "bad_verdict"))
    if outcome in CUT_AT_MAX_TOKENS:
        finish = "length"
        if outcome == "max_tokens":
            content = content[: len(content) // 2]
    input_tokens = tokens(system_prompt(body) + prompt)
    output_tokens = tokens(content or refusal or "")
    data = {
        "id": f"chatcmpl-fake{hashlib.sha1(prompt.encode()).hexdigest()[:16]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": exchange.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": refusal},
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": input_tokens,
            "completion_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        },
        "system_fingerprint": "fp_fake",
    }
    if outcome == "truncated":
        return truncated_reply(data)
    return json_reply(200, data, {"x-request-id": f"req_{time.monotonic_ns()}"})


def anthropic_reply(fake: FakeProvider, exchange: Exchange, body: dict, headers: dict) -> Reply:
    outcome, prompt = exchange.outcome, exchange.prompt
    error = error_reply(fake, exchange, headers)
    if error is not None:
        return error
    if outcome == "malformed":
        return Reply(200, b'{"id": "msg_broken", "type": "message", "content": [{"ty')
    tools = body.get("tools") or []
    tool = next((t for t in tools if t.get("name") == TOOL_NAME), tools[0] if tools else None)
    criteria = (
        criteria_from_schema(tool.get("input_schema")) if tool else None
    ) or fake.default_criteria
    msg_id = f"msg_fake{hashlib.sha1(prompt.encode()).hexdigest()[:20]}"
    if outcome == "echo":
        content = [{"type": "text", "text": prompt}]
        stop = "end_turn"
    elif outcome in ("refuse", "content_filter"):
        content = [{"type": "text", "text": "I can't help with that."}]
        stop = "refusal"
    else:
        scores = verdict(fake, prompt, criteria, bad=outcome == "bad_verdict")
        if outcome == "max_tokens":  # the tool input as far as it got: the first criterion
            scores = dict(list(scores.items())[:1])
        if tool is not None:
            block = {"type": "tool_use", "id": f"toolu_{msg_id[8:]}", "name": tool["name"]}
            content = [{**block, "input": scores}]
            stop = "tool_use"
        else:
            content = [{"type": "text", "text": json.dumps(scores)}]
            stop = "end_turn"
        if outcome in CUT_AT_MAX_TOKENS:
            stop = "max_tokens"
    data = {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": exchange.model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": tokens(system_prompt(body) + prompt),
            "output_tokens": tokens(json.dumps(content)),
        },
    }
    if outcome == "truncated":
        return truncated_reply(data)
    return json_reply(200, data, {"request-id": f"req_{time.monotonic_ns()}"})
