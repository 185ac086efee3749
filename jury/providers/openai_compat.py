"""Judge client for OpenAI-compatible chat completions.

One protocol covers OpenAI, Azure OpenAI, vLLM, Ollama, the llama.cpp server, TGI,
OpenRouter and Together. The SDK makes exactly one attempt (max_retries=0): the jury runner
owns retries, backoff and Retry-After.

The response body is read raw (`with_raw_response`) and checked here rather than through
the SDK's lenient model construction, so that a 200 whose body is not a chat completion
(a cut JSON body, an HTML page from a proxy, an in-band {"error": ...}) becomes
MalformedResponse instead of an AttributeError somewhere later. The same parsing serves the
chunk engine's plain-HTTP path (jury.providers.http).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from jury.providers import structured
from jury.providers.base import (
    VERDICT_SCHEMA_NAME,
    JudgeReply,
    JudgeRequest,
    map_sdk_exception,
    verdict_json_schema,
)
from jury.providers.http import SdkHttpClient


class OpenAICompatClient(SdkHttpClient):
    provider = "openai"
    api_path = "chat/completions"

    def __init__(
        self,
        *,
        model_id: str,
        endpoint: str = "",
        api_key: str | None = None,
        params: Mapping[str, Any] | None = None,
        structured_output: str = structured.NATIVE,
    ) -> None:
        import openai  # imported here so that the other providers work without the SDK

        mode = structured.effective_mode(self.provider, structured_output)
        problem = structured.mode_problem(self.provider, mode)
        if problem is not None:
            raise ValueError(problem)
        super().__init__(label=f"openai-compatible {model_id!r}", api_key=api_key, mode=mode)
        params = dict(params or {})
        self.model_id = model_id
        self.endpoint = endpoint
        self.max_tokens_param = str(params.get("max_tokens_param", "max_tokens"))
        self.azure = bool(params.get("api_version"))
        timeout = float(params.get("timeout_seconds", 120.0))
        # Never api_key=None: the SDK would fall back to OPENAI_API_KEY and send the
        # operator's OpenAI key to a self-hosted or third-party endpoint. A keyless server
        # (Ollama, vLLM, llama.cpp) gets a key provider returning "", which the SDK accepts
        # and which sends no Authorization header at all.
        key: str | Callable[[], str] = api_key if api_key else _no_key
        if self.azure:
            self._client: Any = openai.AzureOpenAI(
                azure_endpoint=endpoint,
                api_version=str(params["api_version"]),
                api_key=key,
                max_retries=0,
                timeout=timeout,
                http_client=openai.DefaultHttpxClient(follow_redirects=False),
            )
        else:
            self._client = openai.OpenAI(
                base_url=endpoint or None,
                api_key=key,
                max_retries=0,
                timeout=timeout,
                # Never a redirect: the endpoint's host is the one the operator allowed.
                http_client=openai.DefaultHttpxClient(follow_redirects=False),
            )
        self._sdk = openai
        # Without a key the SDK insists that Authorization be omitted explicitly.
        self._no_auth: dict[str, Any] = (
            {} if api_key else {"extra_headers": {"Authorization": openai.Omit()}}
        )

    def request_body(self, request: JudgeRequest) -> dict[str, Any]:
        """The JSON body of the chat completion for this request; its structured-output
        fields are the judge's mode's (jury.providers.structured)."""
        messages: list[dict[str, str]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": request.prompt})
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": messages,
            "temperature": request.temperature,
            self.max_tokens_param: request.max_tokens,
        }
        if request.criteria:
            schema = verdict_json_schema(request.criteria)
            body.update(structured.openai_format_fields(self.mode, schema, VERDICT_SCHEMA_NAME))
        return body

    def complete(self, request: JudgeRequest) -> JudgeReply:
        body = self.request_body(request)
        # Everything but model and messages goes as extra_body: the SDK sends it as given,
        # so the body on the wire is `body` on this path as on the engine's (some modes'
        # fields, such as Ollama's "format", are no parameter of the SDK's create).
        rest = {k: v for k, v in body.items() if k not in ("model", "messages")}
        try:
            raw = self._client.chat.completions.with_raw_response.create(
                model=body["model"],
                messages=body["messages"],
                extra_body=rest,
                timeout=request.timeout_seconds,
                **self._no_auth,
            )
            text = raw.http_response.text
        except self._sdk.OpenAIError as exc:
            mapped = map_sdk_exception(
                exc, sdk=self._sdk, label=self.label, secret=self._api_key, mode=self.mode
            )
            if mapped is None:
                raise
            # "from None": the SDK exception's message embeds the response body.
            raise mapped from None
        return self.parse_body(text, body=body)

    def served_models(self, *, timeout_seconds: float) -> list[str]:
        """The model ids the server lists at GET {endpoint}/models: the judge's own host and
        key, nothing sent anywhere else. ProviderError when it lists none (e.g. a 404)."""
        try:
            raw = self._client.models.with_raw_response.list(
                timeout=timeout_seconds, **self._no_auth
            )
            text = raw.http_response.text
        except self._sdk.OpenAIError as exc:
            mapped = map_sdk_exception(exc, sdk=self._sdk, label=self.label, secret=self._api_key)
            if mapped is None:
                raise
            raise mapped from None
        try:
            listing = json.loads(text).get("data")
        except (ValueError, AttributeError):
            raise self.malformed("the model list is not JSON", text) from None
        if not isinstance(listing, list):
            raise self.malformed("the model list has no data", text)
        return [m["id"] for m in listing if isinstance(m, dict) and isinstance(m.get("id"), str)]

    def async_sdk_client(self) -> Any | None:
        """The SDK's AsyncOpenAI for this judge; None for Azure OpenAI (the SDK path only)."""
        if self.azure:
            return None
        # Never api_key=None: the SDK would fall back to OPENAI_API_KEY (see __init__).
        return self._sdk.AsyncOpenAI(
            base_url=self.endpoint or None, api_key=self._api_key or _no_key_async, max_retries=0
        )

    def parse_body(self, text: str, *, body: Mapping[str, Any]) -> JudgeReply:
        """The reply in a 2xx chat-completion body; structured when the judge's mode held
        the server to the verdict schema."""
        held_to_schema = self.mode in structured.SCHEMA_MODES and (
            "response_format" in body or "format" in body
        )
        try:
            data = json.loads(text)
        except ValueError:
            raise self.malformed("the body is not JSON", text) from None
        if not isinstance(data, dict):
            raise self.malformed("the body is not a JSON object", text)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise self.malformed("no choices in the body", text)
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise self.malformed("the first choice has no message", text)
        finish_reason = choice.get("finish_reason")
        refusal = message.get("refusal")
        content = _content_text(message.get("content"))
        refused = bool(refusal) or finish_reason == "content_filter"
        if refused and not content:
            content = refusal if isinstance(refusal, str) else ""
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return JudgeReply(
            text=content,
            input_tokens=_count(usage.get("prompt_tokens")),
            output_tokens=_count(usage.get("completion_tokens")),
            structured=held_to_schema and not refused,
            refused=refused,
            finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        )


def _no_key() -> str:
    return ""


async def _no_key_async() -> str:
    return ""


def _content_text(content: Any) -> str:
    """Message content as text: a string, or (some servers) a list of text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
        return "".join(parts)
    return ""


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
