"""llama-cpp-python's own OpenAI-compatible server as a real process for tests: started with
the packaged SmolLM2 (jury.providers.llama_server), waited for until /v1/models answers,
killed and restarted on the same port to play an outage. No Django import."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.support.processes import wait_for

# The packaged GGUF's id as the server reports it unless --model_alias names it.
MODEL_ALIAS = "smollm2-135m-instruct"
STARTUP_TIMEOUT_SECONDS = 120.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """One `python -m jury.providers.llama_server` process on 127.0.0.1:<port>.

    `n_threads` 1 and a small context keep it slow and light, as a loaded provider would be;
    `extra_args` go to llama_cpp.server unchanged."""

    def __init__(
        self,
        log_path: Path,
        *,
        port: int | None = None,
        n_ctx: int = 2048,
        n_threads: int = 1,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.port = port or free_port()
        self.log_path = log_path
        self.args = [
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--model_alias",
            MODEL_ALIAS,
            "--n_ctx",
            str(n_ctx),
            "--n_threads",
            str(n_threads),
            "--n_threads_batch",
            str(n_threads),
            *extra_args,
        ]
        self.process: subprocess.Popen | None = None
        self.starts = 0

    @property
    def base_url(self) -> str:
        """What a judge's endpoint names (the OpenAI SDK's base URL)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        self.starts += 1
        log = open(self.log_path, "ab")  # noqa: SIM115 - the process writes to it until stopped
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jury.providers.llama_server", *self.args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            start_new_session=True,
        )
        log.close()
        wait_for(self.ready, STARTUP_TIMEOUT_SECONDS, f"llama_cpp.server on port {self.port}")

    def ready(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            tail = self.log_path.read_text(errors="replace")[-2000:]
            raise AssertionError(f"llama_cpp.server exited ({self.process.returncode}):\n{tail}")
        try:
            return bool(self.models())
        except (OSError, urllib.error.URLError):
            return False

    def models(self) -> list[str]:
        """The model ids /v1/models lists."""
        with urllib.request.urlopen(f"{self.base_url}/models", timeout=5) as response:
            return [m["id"] for m in json.load(response)["data"]]

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill would: requests in flight get a reset."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        self.kill()
        self.process = None


@contextmanager
def running_llama_server(log_path: Path, **kwargs: object) -> Iterator[LlamaServer]:
    server = LlamaServer(log_path, **kwargs)  # type: ignore[arg-type]
    server.start()
    try:
        yield server
    finally:
        server.stop()
