"""Running judge calls to their end: cache, limits, retries with backoff, verdict, scores.

Every call ends in exactly one status (ok, invalid verdict, provider error, timeout,
refused) with its raw output kept. Executing a call twice is harmless: a call that is no
longer pending is left alone, a call another live worker holds is waited for (it finishes
it, or dies and its claim lapses), and identical requests (same prompt hash) are served from
an earlier ok call at no cost.

Two ways to run calls, under the same rules:

- `execute_call(call_id=...)`: one call, synchronously, through the SDK's blocking client
  and `limits.acquire` (which polls). The per-call Celery task, `run_jury --inline` and the
  database limiter (SQLite, the embedded broker) use it.
- `execute_calls(call_ids=...)`: a chunk of calls, the Celery task `start_run` sends when the
  limits live in Redis. The provider requests of every chunk a worker process runs go
  through one asyncio event loop of that process (`Engine`, a thread of its own), sent with
  aiohttp in the providers' plain-HTTP form (jury.providers.http): one process keeps dozens
  of requests in flight without a thread each, and waits for the judge's Redis tokens
  without polling. The task's own thread does the database work: it loads the chunk in one
  query, serves cache hits, and stores the answers in batches as they arrive (one
  transaction per batch), so a killed worker loses only the requests in flight; those calls
  stay pending for a resume.

Modules: storage (storing outcomes, the cache), retries (backoff), single (one call),
clients (the event loop's provider clients), engine (the event loop and Redis tokens),
chunks (a chunk).
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
