"""The plain-HTTP form of the OpenAI-compatible and Anthropic protocols.

The chunk engine (jury.execution) sends a judge's requests itself, with aiohttp on its event
loop, rather than through the SDKs' request layer. `SdkHttpClient`, the base of both SDK
clients, gives it what to send (`build_request`: the body of the synchronous client, the URL
and headers the official SDK's async client builds) and how to read the answer
(`parse_reply`: the same parsing and status mapping as the SDK path), through public methods
only, so an SDK upgrade that moves its internals cannot break the engine silently.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jury.providers.base import (
    ConnectionFailed,
    JudgeReply,
    JudgeRequest,
    MalformedResponse,
    ProviderError,
    ProviderTimeout,
    redact,
    status_error,
)

# Headers that carry a key: never sent by a judge without one (a keyless gateway, vLLM,
# Ollama), whatever the SDK would put there by default.
AUTH_HEADERS = frozenset({"authorization", "x-api-key"})


@dataclass(frozen=True)
class HttpRequest:
    """One judge request as HTTP: POST `body` (as JSON) to `url` with `headers`."""

    url: str
    headers: Mapping[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class HttpReply:
    """A provider's answer as HTTP: status, headers, body text, reason phrase."""

    status: int
    headers: Mapping[str, str]
    text: str
    reason: str = ""


def sdk_headers(headers: Mapping[str, Any], *, keyed: bool) -> dict[str, str]:
    """The headers an SDK client sends on every request (auth, API version, content type,
    client identification), without its Omit markers, and without auth headers for a judge
    that has no key."""
    return {
        name: value
        for name, value in headers.items()
        if isinstance(value, str) and (keyed or name.lower() not in AUTH_HEADERS)
    }


class SdkHttpClient(ABC):
    """What the OpenAI-compatible and Anthropic clients share: a label for messages, the key
    (kept out of every message), and the plain-HTTP form of their requests and replies.

    `mode` is the judge's structured-output mode (resolved: never ""); an error answer that
    names it is UnsupportedStructuredOutput on both paths.

    A subclass sets `api_path` and implements `request_body`, `parse_body` and
    `async_sdk_client`.
    """

    api_path = ""  # joined to the SDK's base URL

    def __init__(self, *, label: str, api_key: str | None, mode: str) -> None:
        self.label = label
        self.mode = mode  # the structured-output mode, resolved (jury.providers.structured)
        self._api_key = api_key or None
        self._target: tuple[str, dict[str, str]] | None = None
        self._target_known = False

    # --- what a protocol defines -------------------------------------------------------
    @abstractmethod
    def request_body(self, request: JudgeRequest) -> dict[str, Any]: ...

    @abstractmethod
    def parse_body(self, text: str, *, body: Mapping[str, Any]) -> JudgeReply:
        """The reply in a 2xx body `text` to the request `body`; MalformedResponse when the
        text is not the protocol's shape."""
        ...

    @abstractmethod
    def async_sdk_client(self) -> Any | None:
        """The official SDK's async client for this judge (its URL and headers are the ones
        to send), or None when the judge has no plain-HTTP form here."""
        ...

    # --- the plain-HTTP form ------------------------------------------------------------
    def build_request(self, request: JudgeRequest) -> HttpRequest | None:
        """The request as HTTP, or None when this judge goes through its SDK only (Azure
        OpenAI): the caller then runs `complete` in a thread."""
        target = self._http_target()
        if target is None:
            return None
        url, headers = target
        return HttpRequest(url=url, headers=headers, body=self.request_body(request))

    def parse_reply(self, reply: HttpReply, *, request: HttpRequest) -> JudgeReply:
        """The JudgeReply in a provider's answer to `request`, or the ProviderError it means
        (raised): the status mapping and parsing of the SDK path."""
        if not 200 <= reply.status < 300:
            raise status_error(
                reply.status,
                reply.headers,
                reply.text,
                label=self.label,
                secret=self._api_key,
                reason=reply.reason,
                mode=self.mode,
            )
        return self.parse_body(reply.text, body=request.body)

    def transport_error(self, exc: BaseException) -> ProviderError:
        """The ProviderError for a request that got no answer: a timeout, or a connection
        that failed (its message redacted)."""
        if isinstance(exc, TimeoutError):
            return ProviderTimeout(f"{self.label}: no response within the timeout")
        detail = redact(str(exc), self._api_key)
        return ConnectionFailed(f"{self.label}: connection failed ({type(exc).__name__}: {detail})")

    def malformed(self, what: str, text: str) -> MalformedResponse:
        """A 2xx whose body is not the protocol's shape (the body is not kept: it may be
        anything the remote server chose to send)."""
        return MalformedResponse(
            f"{self.label}: 200 but {what} ({len(text)} characters, not kept)", status_code=200
        )

    def _http_target(self) -> tuple[str, dict[str, str]] | None:
        """URL and headers, built once from the SDK's async client."""
        if not self._target_known:
            sdk_client = self.async_sdk_client()
            if sdk_client is not None:
                # Joined as the SDK joins a path: its base URL's path ends in "/".
                base = sdk_client.base_url
                url = str(base.copy_with(raw_path=base.raw_path + self.api_path.encode()))
                headers = {**sdk_client.auth_headers, **sdk_client.default_headers}
                self._target = (url, sdk_headers(headers, keyed=bool(self._api_key)))
            self._target_known = True
        return self._target
