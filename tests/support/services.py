"""Servers a test needs (PostgreSQL, Redis, RabbitMQ): reachable, or skip (fail in CI)."""

from __future__ import annotations

import socket

from tests.support.unavailable import unavailable


def service_reachable(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def require_service(name: str, host: str, port: int) -> None:
    """Skip locally when a server is not running; in CI (CI=true) its absence is a failure."""
    if service_reachable(host, port):
        return
    message = f"{name} is not reachable at {host}:{port}"
    unavailable(message, in_ci_then=" (CI must start it)")
