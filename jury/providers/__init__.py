"""Judge providers: one attempt at one verdict, behind one small interface.

`client_for(provider=..., model_id=..., ...)` returns a JudgeClient whose
`complete(JudgeRequest) -> JudgeReply` either returns what the judge said or raises a
ProviderError subclass that says whether retrying can help. The SDKs are imported by the
provider modules only when a client of that kind is created. The OpenAI-compatible and
Anthropic clients also give their requests and replies in plain-HTTP form (http.py), which
the chunk engine sends itself.
"""

from jury.providers.base import (
    PROVIDERS,
    VERDICT_TOOL_NAME,
    BadRequest,
    ConnectionFailed,
    CriterionSpec,
    JudgeClient,
    JudgeReply,
    JudgeRequest,
    MalformedResponse,
    NotAllowed,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    ServerError,
    UnsupportedStructuredOutput,
    parse_retry_after,
    verdict_json_schema,
)
from jury.providers.registry import client_for

__all__ = [
    "PROVIDERS",
    "VERDICT_TOOL_NAME",
    "BadRequest",
    "ConnectionFailed",
    "CriterionSpec",
    "JudgeClient",
    "JudgeReply",
    "JudgeRequest",
    "MalformedResponse",
    "NotAllowed",
    "ProviderError",
    "ProviderTimeout",
    "RateLimited",
    "ServerError",
    "UnsupportedStructuredOutput",
    "client_for",
    "parse_retry_after",
    "verdict_json_schema",
]
