"""llama-cpp-python's own OpenAI-compatible server (`llama_cpp.server`), started the way the
offline judge loads its model: `python -m jury.providers.llama_server --model PATH --port N`.

Any flag of `python -m llama_cpp.server` is accepted; without `--model` the packaged
SmolLM2-135M-Instruct GGUF is served. The only difference from running llama_cpp.server
directly is that the weights are loaded without llama.cpp's extra buffer types, which crash
the first decode on CPUs with AMX (jury.providers.local_llama.without_extra_buffer_types).
A judge of provider "openai" with endpoint `http://127.0.0.1:N/v1` then talks to it as it
would to any hosted provider.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from jury.providers.local_llama import without_extra_buffer_types
from jury.providers.local_models import smollm2_gguf_path


def server_argv(argv: Sequence[str]) -> list[str]:
    """The arguments for llama_cpp.server: `argv`, plus the packaged model when none is named."""
    args = list(argv)
    if not any(a == "--model" or a.startswith("--model=") for a in args):
        args = ["--model", str(smollm2_gguf_path()), *args]
    return args


def main(argv: Sequence[str] | None = None) -> None:
    import llama_cpp
    from llama_cpp.server.__main__ import main as serve

    sys.argv = ["llama_cpp.server", *server_argv(sys.argv[1:] if argv is None else argv)]
    # The server process loads one model and builds nothing else: the wrapper stays on.
    with without_extra_buffer_types(llama_cpp):
        serve()


if __name__ == "__main__":
    main()
