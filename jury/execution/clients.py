"""The judges' provider clients: the key a client is cached under, and the SDKs' async
clients over aiohttp that the chunk engine uses."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import httpx

from jury.models import Judge
from jury.providers import base as providers
from jury.providers import client_for


def client_key(judge: Judge) -> tuple:
    api_key = os.environ.get(judge.api_key_env) if judge.api_key_env else None
    return (
        judge.pk,
        judge.provider,
        judge.model_id,
        judge.endpoint,
        api_key,
        repr(sorted(judge.params.items())),
    )


async def no_key() -> str:
    return ""


def judge_http_transport() -> httpx.AsyncBaseTransport:
    """The transport under the SDKs' async clients: aiohttp through httpx-aiohttp, the
    combination the OpenAI and Anthropic SDKs ship as DefaultAioHttpClient. httpx's default
    transport (httpcore, h11, anyio) spent about a third of a request's CPU in the jury
    benchmark, where two cores drive 48 requests in flight; aiohttp's C parser does not."""
    from httpx_aiohttp import AiohttpTransport

    return AiohttpTransport()


_cookieless_classes: dict[type, type] = {}


def _cookieless(http_client_class: type) -> type:
    """The SDK's httpx client class without a cookie jar. Judge APIs are stateless (a
    provider's cookies, e.g. a CDN's bot-management cookie, need not come back), and httpx
    reads every response's cookies through a urllib request and an email message: a fifth of
    a request's CPU here."""
    found = _cookieless_classes.get(http_client_class)
    if found is None:

        class _Cookies(httpx.Cookies):
            def extract_cookies(self, response: httpx.Response) -> None:
                return None

        no_cookies = _Cookies()

        class Cookieless(http_client_class):  # type: ignore[misc, valid-type]
            @property
            def cookies(self) -> httpx.Cookies:
                return no_cookies

            @cookies.setter
            def cookies(self, value: Any) -> None:
                pass  # nothing is kept

        found = _cookieless_classes[http_client_class] = Cookieless
    return found


class AsyncProvider:
    """A judge's provider for the event loop: the SDK's async client, with the request body
    and reply parsing of the synchronous client (jury.providers), so both paths send and read
    exactly the same thing. Its HTTP client keeps no cookies and runs over aiohttp.
    Other providers (Azure OpenAI, the local model) run their synchronous client in a
    thread."""

    def __init__(self, judge: Judge, api_key: str | None) -> None:
        self.sync: Any = client_for(
            provider=judge.provider,
            model_id=judge.model_id,
            endpoint=judge.endpoint,
            api_key=api_key,
            params=judge.params,
        )
        self.client: Any = None
        timeout = float(judge.params.get("timeout_seconds", 120.0))
        if judge.provider == Judge.Provider.OPENAI and not judge.params.get("api_version"):
            import openai

            self.sdk: Any = openai
            self.sdk_error: Any = openai.OpenAIError
            self.path = "/chat/completions"
            # Never api_key=None: the SDK would fall back to OPENAI_API_KEY (see openai_compat).
            self.headers: dict[str, Any] = {} if api_key else {"Authorization": openai.Omit()}
            self.client = openai.AsyncOpenAI(
                base_url=judge.endpoint or None,
                api_key=api_key or no_key,
                max_retries=0,
                timeout=timeout,
                http_client=_cookieless(openai.DefaultAsyncHttpxClient)(
                    transport=judge_http_transport()
                ),
            )
        elif judge.provider == Judge.Provider.ANTHROPIC:
            import anthropic

            self.sdk = anthropic
            self.sdk_error = anthropic.AnthropicError
            self.path = "/v1/messages"
            self.headers = {} if api_key else {"X-Api-Key": anthropic.Omit()}
            self.client = anthropic.AsyncAnthropic(
                base_url=judge.endpoint or None,
                api_key=api_key or "",
                max_retries=0,
                timeout=timeout,
                http_client=_cookieless(anthropic.DefaultAsyncHttpxClient)(
                    transport=judge_http_transport()
                ),
            )

    async def complete(self, request: providers.JudgeRequest) -> providers.JudgeReply:
        if self.client is None:
            return await asyncio.to_thread(self.sync.complete, request)
        body = self.sync.request_body(request)
        try:
            # The SDK's own request path (base URL, auth and version headers, timeouts, its
            # error classes), without re-validating a body that request_body already built.
            response = await self.client.post(
                self.path,
                body=body,
                cast_to=httpx.Response,
                options={"timeout": request.timeout_seconds, "headers": self.headers},
            )
            text = response.text
        except self.sdk_error as exc:
            mapped = providers.map_sdk_exception(
                exc, sdk=self.sdk, label=self.sync._label, secret=self.sync._api_key
            )
            if mapped is None:
                raise
            raise mapped from None  # the SDK message embeds the response body
        if self.path == "/chat/completions":
            return self.sync._reply_from_body(text, structured="response_format" in body)
        return self.sync._reply_from_body(text)
