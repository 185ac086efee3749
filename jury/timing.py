"""How long a judge call may take, as pure rules (no Django): the timeout of one request,
sized from the judge's max tokens, and the default retry budget of a call.

A timed-out request still costs the server its whole generation, so the default timeout
leaves a slow server time to write every token it was allowed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# What a request asks for when the judge's params name no max_tokens.
DEFAULT_MAX_TOKENS = 1024
# Connecting, queueing at the server and reading the prompt.
TIMEOUT_BASE_SECONDS = 30.0
# The slowest server a default timeout waits for (a loaded CPU server).
SLOWEST_TOKENS_PER_SECOND = 5.0
TIMEOUT_CAP_SECONDS = 1800.0
# A call keeps trying (backoffs, waits while its provider is unreachable) this long by
# default: longer than a server restart or a short provider incident.
DEFAULT_RETRY_BUDGET_SECONDS = 900


def max_tokens_of(params: Mapping[str, Any]) -> int:
    """The max_tokens a judge's requests ask for."""
    return int(params.get("max_tokens", DEFAULT_MAX_TOKENS))


def timeout_for_max_tokens(max_tokens: int) -> float:
    """The timeout of a request allowed `max_tokens` output tokens: the base, plus the time
    the slowest server takes to write them, capped."""
    seconds = TIMEOUT_BASE_SECONDS + max(max_tokens, 0) / SLOWEST_TOKENS_PER_SECOND
    return min(seconds, TIMEOUT_CAP_SECONDS)


TIMEOUT_RULE = (
    f"{TIMEOUT_BASE_SECONDS:.0f} s plus {1 / SLOWEST_TOKENS_PER_SECOND:g} s per max token "
    f"(a server writing {SLOWEST_TOKENS_PER_SECOND:g} tokens per second), at most "
    f"{TIMEOUT_CAP_SECONDS:.0f} s: {timeout_for_max_tokens(DEFAULT_MAX_TOKENS):.0f} s for "
    f"{DEFAULT_MAX_TOKENS} max tokens"
)
