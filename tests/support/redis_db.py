"""The parallel run's rule for the modules that flush a fixed Redis database: those that flush
the same one are one unit of work (tests/conftest.py), so they run one after the other, in one
test process. The group is derived from the database the module uses, so that the two cannot
drift apart."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest


def flushes_redis(database: str | int) -> pytest.MarkDecorator:
    """The mark of a module that flushes Redis database ``database`` (its number, or a
    redis:// URL naming it)."""
    number = (
        database if isinstance(database, int) else int(urlsplit(database).path.lstrip("/") or 0)
    )
    return pytest.mark.xdist_group(f"redis-db-{number}")
