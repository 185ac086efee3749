"""The jury bench's fixed settings: default database and Redis, the judges, the entry script."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

# The script the bench's own subprocesses run (`--internal server|worker`).
ENTRY = str(Path(__file__).resolve().parents[1] / "bench_jury.py")
DEFAULT_DB_URL = "postgres://postgres@127.0.0.1:5432/medhelm_bench_jury"
# The tests use Redis databases 14 and 15; this bench flushes its own.
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/12"
API_KEY_ENV = "MEDHELM_JUDGE_KEY_BENCH"
WARMUP_ITEMS = 64
# (name, provider, model id, input price, output price per million tokens)
JUDGES = (
    ("bench-gpt-large", "openai", "bench-gpt-large", Decimal("2.50"), Decimal("10.00")),
    ("bench-gpt-small", "openai", "bench-gpt-small", Decimal("0.15"), Decimal("0.60")),
    ("bench-claude", "anthropic", "bench-claude", Decimal("3.00"), Decimal("15.00")),
)
