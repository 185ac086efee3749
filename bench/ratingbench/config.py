"""The rating bench's fixed settings: its default database, gunicorn, the entry script."""

from __future__ import annotations

from pathlib import Path

from _support import VENV_BIN

# The script the bench's own Django subprocesses run (`--internal seed|queries`).
ENTRY = str(Path(__file__).resolve().parents[1] / "bench_rating.py")
GUNICORN = str(VENV_BIN / "gunicorn")
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/medhelm_bench"
JSON_MARK = "BENCH_JSON:"
