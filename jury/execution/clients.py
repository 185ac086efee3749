"""The judges' provider clients on the chunk engine's event loop, and the key a client is
cached under."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

import aiohttp

from jury.models import Judge
from jury.providers import base as providers
from jury.providers import client_for

# Headers that carry a key: never sent by a judge without one (a keyless gateway, vLLM,
# Ollama), whatever the SDK would put there by default.
AUTH_HEADERS = frozenset({"authorization", "x-api-key"})


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


def judge_http_session() -> aiohttp.ClientSession:
    """The HTTP session of one judge on the event loop: aiohttp (the library under the SDKs'
    own DefaultAioHttpClient), the SDKs' trust store, no cookie jar (judge APIs are
    stateless: a CDN's bot-management cookie need not come back) and no connection limit of
    its own (the judge's Redis tokens bound what is in flight)."""
    import httpx

    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0, ssl=httpx.create_ssl_context()),
        cookie_jar=aiohttp.DummyCookieJar(),
    )


def sdk_headers(headers: Mapping[str, Any], *, keyed: bool) -> dict[str, str]:
    """The headers the SDK client sends on every request (auth, API version, content type,
    client identification), without its Omit markers, and without auth headers for a judge
    that has no key."""
    return {
        name: value
        for name, value in headers.items()
        if isinstance(value, str) and (keyed or name.lower() not in AUTH_HEADERS)
    }


class AsyncProvider:
    """A judge's provider for the event loop.

    For the OpenAI-compatible and Anthropic protocols: the request body and the reply parsing
    of the synchronous client (jury.providers), so both paths send and read exactly the same
    thing; the URL and the headers that the official SDK's async client builds for this
    judge; aiohttp to send them; the SDK path's status mapping (providers.status_error).
    The SDK's own request layer (request validation, options models, httpx requests and
    responses) was the jury benchmark's largest single cost on two cores: with the same
    bodies and parsing, the SDK's async client over its DefaultAioHttpClient takes 4.5-6
    times the CPU a request of this path (bench/bench_judge_client.py, 48 in flight; e.g.
    1.57 against 0.34 ms on one machine, 4.4 against 0.8 ms on a slower one). Other
    providers (Azure OpenAI, the local model) run their synchronous client in a thread."""

    def __init__(self, judge: Judge, api_key: str | None) -> None:
        self.sync: Any = client_for(
            provider=judge.provider,
            model_id=judge.model_id,
            endpoint=judge.endpoint,
            api_key=api_key,
            params=judge.params,
        )
        self.protocol = judge.provider
        self.url = ""
        self.headers: dict[str, str] = {}
        self.session: aiohttp.ClientSession | None = None
        sdk_client: Any = None
        if judge.provider == Judge.Provider.OPENAI and not judge.params.get("api_version"):
            import openai

            # Never api_key=None: the SDK would fall back to OPENAI_API_KEY (see openai_compat).
            sdk_client = openai.AsyncOpenAI(
                base_url=judge.endpoint or None, api_key=api_key or no_key, max_retries=0
            )
            path = "chat/completions"
        elif judge.provider == Judge.Provider.ANTHROPIC:
            import anthropic

            sdk_client = anthropic.AsyncAnthropic(
                base_url=judge.endpoint or None, api_key=api_key or "", max_retries=0
            )
            path = "v1/messages"
        if sdk_client is not None:
            # Joined as the SDK's _prepare_url does: its base URL's path ends in "/".
            base = sdk_client.base_url
            self.url = str(base.copy_with(raw_path=base.raw_path + path.encode()))
            self.headers = sdk_headers(
                {**sdk_client.auth_headers, **sdk_client.default_headers}, keyed=bool(api_key)
            )

    @property
    def label(self) -> str:
        return self.sync._label

    async def complete(self, request: providers.JudgeRequest) -> providers.JudgeReply:
        if not self.url:
            return await asyncio.to_thread(self.sync.complete, request)
        if self.session is None:
            self.session = judge_http_session()
        body = self.sync.request_body(request)
        seconds = request.timeout_seconds
        secret = self.sync._api_key
        try:
            async with self.session.post(
                self.url,
                data=json.dumps(body).encode(),
                headers=self.headers,
                # What the SDKs' aiohttp transport makes of their timeout: connecting, and
                # each wait for the answer's bytes, at most `seconds`.
                timeout=aiohttp.ClientTimeout(sock_connect=seconds, sock_read=seconds),
            ) as response:
                raw = await response.read()
                status, headers, reason = response.status, response.headers, response.reason
                charset = response.charset
        except TimeoutError:
            raise providers.ProviderTimeout(
                f"{self.label}: no response within the timeout"
            ) from None
        except aiohttp.ClientError as exc:
            detail = providers.redact(str(exc), secret)
            raise providers.ConnectionFailed(
                f"{self.label}: connection failed ({type(exc).__name__}: {detail})"
            ) from None
        text = _decode(raw, charset)
        if not 200 <= status < 300:
            raise providers.status_error(
                status,
                headers,
                text,
                label=self.label,
                secret=secret,
                reason=reason or _phrase(status),
            )
        if self.protocol == Judge.Provider.OPENAI:
            return self.sync._reply_from_body(text, structured="response_format" in body)
        return self.sync._reply_from_body(text)

    async def aclose(self) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None


def _decode(raw: bytes, charset: str | None) -> str:
    """The body as text, as httpx reads it: the declared charset, else UTF-8; bytes that do
    not decode become U+FFFD (and the reply parser then finds no valid JSON)."""
    try:
        return raw.decode(charset or "utf-8", errors="replace")
    except LookupError:  # an unknown charset name
        return raw.decode("utf-8", errors="replace")


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "HTTP error"
