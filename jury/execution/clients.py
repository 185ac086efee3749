"""The judges' provider clients on the chunk engine's event loop, and the key a client is
cached under."""

from __future__ import annotations

import asyncio
import json
import os
from http import HTTPStatus
from typing import Any

import aiohttp

from jury.models import Judge
from jury.providers import base as providers
from jury.providers import client_for
from jury.providers.http import HttpReply, HttpRequest, SdkHttpClient


def judge_refusal(judge: Judge) -> str | None:
    """Why this judge cannot be called (the operator's rules refuse its key variable or
    endpoint, or its structured-output mode is not its provider's: Judge.definition_problems),
    or None. Checked when a call is made, not only when the judge is saved: a judge stored
    before the rules, or written through the ORM, sends nothing."""
    problems = judge.definition_problems()
    if not problems:
        return None
    return f"judge {judge.name!r} is not allowed to be called: " + " ".join(problems.values())


def judge_api_key(judge: Judge) -> str | None:
    """The judge's key from its environment variable (None without one); NotAllowed, before
    the environment is read, when the rules refuse the judge."""
    refusal = judge_refusal(judge)
    if refusal is not None:
        raise providers.NotAllowed(refusal)
    return os.environ.get(judge.api_key_env) if judge.api_key_env else None


def client_key(judge: Judge) -> tuple:
    """What a judge's client is cached under (its key included); NotAllowed when the rules
    refuse the judge."""
    api_key = judge_api_key(judge)
    return (
        judge.pk,
        judge.provider,
        judge.model_id,
        judge.endpoint,
        api_key,
        repr(sorted(judge.params.items())),
        judge.structured_output,
    )


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


class AsyncProvider:
    """A judge's provider for the event loop.

    For the OpenAI-compatible and Anthropic protocols: the request the synchronous client
    builds in plain-HTTP form (`build_request`: its body, the URL and headers of the
    official SDK's async client), sent with aiohttp, and read back by the same client
    (`parse_reply`: its parsing and status mapping), so both paths send and read exactly the
    same thing without the SDK's request layer, the costliest part of a request on the
    engine (bench/bench_judge_client.py measures it). Other providers (Azure OpenAI, the
    local model) run their synchronous client in a thread."""

    def __init__(self, judge: Judge, api_key: str | None) -> None:
        self.sync: Any = client_for(
            provider=judge.provider,
            model_id=judge.model_id,
            endpoint=judge.endpoint,
            api_key=api_key,
            params=judge.params,
            structured_output=judge.structured_output,
        )
        self.session: aiohttp.ClientSession | None = None

    async def complete(self, request: providers.JudgeRequest) -> providers.JudgeReply:
        sync = self.sync
        http = sync.build_request(request) if isinstance(sync, SdkHttpClient) else None
        if http is None:
            return await asyncio.to_thread(sync.complete, request)
        try:
            reply = await self._post(http, timeout_seconds=request.timeout_seconds)
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise sync.transport_error(exc) from None
        return sync.parse_reply(reply, request=http)

    async def _post(self, http: HttpRequest, *, timeout_seconds: float) -> HttpReply:
        if self.session is None:
            self.session = judge_http_session()
        async with self.session.post(
            http.url,
            data=json.dumps(http.body).encode(),
            headers=http.headers,
            # Never a redirect: the endpoint's host is the one the operator allowed (and the
            # SDK path follows none either).
            allow_redirects=False,
            # What the SDKs' aiohttp transport makes of their timeout: connecting, and each
            # wait for the answer's bytes, at most `timeout_seconds`.
            timeout=aiohttp.ClientTimeout(sock_connect=timeout_seconds, sock_read=timeout_seconds),
        ) as response:
            raw = await response.read()
            return HttpReply(
                status=response.status,
                headers=response.headers,
                text=_decode(raw, response.charset),
                reason=response.reason or _phrase(response.status),
            )

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
