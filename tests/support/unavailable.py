"""What a test does when something it needs is not on this machine: skip, naming it; under
CI (CI=true), where .ci/run installs and starts everything, fail instead, so that a missing
install step cannot pass as skipped tests."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def unavailable(reason: str, *, in_ci_then: str = "") -> NoReturn:
    """Skip with `reason`; under CI fail with `reason` and `in_ci_then` (what CI must do)."""
    if in_ci():
        pytest.fail(reason + in_ci_then)
    pytest.skip(reason)
