"""Judge client for the Anthropic Messages API.

Structured output is a forced tool call: the request offers one tool, record_verdict, whose
input_schema is the verdict schema, and tool_choice makes the model call it. The verdict is
that tool_use block's input, serialised back to JSON text so that every provider hands
`jury.verdicts.parse_verdict` the same thing. One attempt per call (max_retries=0). The same
parsing serves the chunk engine's plain-HTTP path (jury.providers.http).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from jury.providers import structured
from jury.providers.base import (
    VERDICT_TOOL_NAME,
    JudgeReply,
    JudgeRequest,
    map_sdk_exception,
    verdict_json_schema,
)
from jury.providers.http import SdkHttpClient


class AnthropicMessagesClient(SdkHttpClient):
    provider = "anthropic"
    api_path = "v1/messages"

    def __init__(
        self,
        *,
        model_id: str,
        endpoint: str = "",
        api_key: str | None = None,
        params: Mapping[str, Any] | None = None,
        structured_output: str = structured.NATIVE,
    ) -> None:
        import anthropic  # imported here so that the other providers work without the SDK

        mode = structured.effective_mode(self.provider, structured_output)
        problem = structured.mode_problem(self.provider, mode)
        if problem is not None:
            raise ValueError(problem)
        super().__init__(label=f"anthropic {model_id!r}", api_key=api_key, mode=mode)
        params = dict(params or {})
        self.model_id = model_id
        self.endpoint = endpoint
        # An explicit api_key (even "") stops the SDK from reading ANTHROPIC_API_KEY and
        # credential profiles: the caller decides which key a judge uses.
        self._client = anthropic.Anthropic(
            base_url=endpoint or None,
            api_key=api_key or "",
            max_retries=0,
            timeout=float(params.get("timeout_seconds", 120.0)),
            # Never a redirect: the endpoint's host is the one the operator allowed.
            http_client=anthropic.DefaultHttpxClient(follow_redirects=False),
        )
        self._sdk = anthropic
        # Without a key (a keyless gateway) the SDK insists the header be omitted explicitly.
        self._no_auth: dict[str, Any] = (
            {} if api_key else {"extra_headers": {"X-Api-Key": anthropic.Omit()}}
        )

    def request_body(self, request: JudgeRequest) -> dict[str, Any]:
        """The keyword arguments of messages.create for this request."""
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": [{"role": "user", "content": request.prompt}],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.system:  # the API rejects an empty system text
            body["system"] = request.system
        if self.mode == structured.TOOL and request.criteria:
            body["tools"] = [
                {
                    "name": VERDICT_TOOL_NAME,
                    "description": "Record the verdict: one score and explanation per criterion.",
                    "input_schema": verdict_json_schema(request.criteria),
                }
            ]
            body["tool_choice"] = {"type": "tool", "name": VERDICT_TOOL_NAME}
        return body

    def complete(self, request: JudgeRequest) -> JudgeReply:
        body = self.request_body(request)
        try:
            raw = self._client.messages.with_raw_response.create(
                **body, timeout=request.timeout_seconds, **self._no_auth
            )
            text = raw.http_response.text
        except self._sdk.AnthropicError as exc:
            mapped = map_sdk_exception(
                exc, sdk=self._sdk, label=self.label, secret=self._api_key, mode=self.mode
            )
            if mapped is None:
                raise
            raise mapped from None  # the SDK message embeds the response body
        return self.parse_body(text, body=body)

    def async_sdk_client(self) -> Any:
        """The SDK's AsyncAnthropic for this judge (its URL and headers are the ones to send)."""
        return self._sdk.AsyncAnthropic(
            base_url=self.endpoint or None, api_key=self._api_key or "", max_retries=0
        )

    def parse_body(self, text: str, *, body: Mapping[str, Any]) -> JudgeReply:
        """The reply in a 2xx Messages body: the verdict tool's input when the model called
        it (whatever `body` asked for), else the text blocks."""
        try:
            data = json.loads(text)
        except ValueError:
            raise self.malformed("the body is not JSON", text) from None
        if not isinstance(data, dict) or not isinstance(data.get("content"), list):
            raise self.malformed("the body is not a message", text)
        stop_reason = data.get("stop_reason")
        stop_reason = stop_reason if isinstance(stop_reason, str) else None
        blocks = [block for block in data["content"] if isinstance(block, dict)]
        tool_inputs = [
            block.get("input")
            for block in blocks
            if block.get("type") == "tool_use" and block.get("name") == VERDICT_TOOL_NAME
        ]
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        input_tokens = _count(usage.get("input_tokens"))
        if input_tokens is not None:
            # Prompt caching bills cached tokens separately; the total read is their sum.
            for extra in ("cache_creation_input_tokens", "cache_read_input_tokens"):
                input_tokens += _count(usage.get(extra)) or 0
        refused = stop_reason == "refusal"
        if tool_inputs and not refused:
            verdict = tool_inputs[0]
            if not isinstance(verdict, dict):
                raise self.malformed("the tool_use input is not an object", text)
            reply_text = json.dumps(verdict, ensure_ascii=False)
            structured = True
        else:
            # No verdict tool call (plain mode, a refusal, or a model that answered in
            # prose): the text blocks, verbatim, for the strict verdict parser to reject.
            reply_text = "".join(
                block["text"]
                for block in blocks
                if block.get("type") == "text" and isinstance(block.get("text"), str)
            )
            structured = False
        return JudgeReply(
            text=reply_text,
            input_tokens=input_tokens,
            output_tokens=_count(usage.get("output_tokens")),
            structured=structured,
            refused=refused,
            finish_reason=stop_reason,
        )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
