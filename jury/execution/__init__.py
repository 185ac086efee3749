"""Running judge calls to their end: cache, limits, retries with backoff, verdict, scores.

Every call ends in exactly one status with its raw output kept, and running a call twice is
harmless. `execute_call` runs one call synchronously (the per-call task, `run_jury --inline`,
the database limiter); `execute_calls` runs a chunk on the worker's event loop (`Engine`)
when the limits live in Redis, storing answers in batches so a killed worker loses only the
requests in flight. Modules: storage, retries, attempts, call_attempts, single, clients,
engine, chunks. A provider that is down pauses its calls (jury.breakers).
"""

from jury.execution.chunks import execute_calls
from jury.execution.clients import judge_http_session
from jury.execution.engine import stop_engine
from jury.execution.retries import DEFAULT_MAX_ATTEMPTS, backoff_seconds
from jury.execution.single import execute_call
from jury.execution.storage import call_cost

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "backoff_seconds",
    "call_cost",
    "execute_call",
    "execute_calls",
    "judge_http_session",
    "stop_engine",
]
