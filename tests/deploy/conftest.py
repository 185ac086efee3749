"""The deployment tests drive the same Chromium as the browser tests (tests/e2e)."""

from tests.e2e.conftest import browser  # noqa: F401 (a fixture)
