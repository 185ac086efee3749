"""Judges and runs for the jury tests."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from annotation.models import RatingStudy
from jury import services
from jury.models import Judge, JuryRun
from tests.support.fake_provider import FakeProvider


def make_judge(
    fake: FakeProvider | None = None,
    *,
    name: str = "gpt-judge",
    provider: str = "openai",
    **kw: Any,
) -> Judge:
    """A judge of the fake provider (no endpoint without one), its key in MEDHELM_JUDGE_KEY_FAKE."""
    endpoint = ""
    if fake is not None:
        endpoint = fake.openai_url if provider == "openai" else fake.anthropic_url
    defaults: dict[str, Any] = {
        "provider": provider,
        "model_id": f"{name}-model",
        "endpoint": endpoint,
        "api_key_env": "MEDHELM_JUDGE_KEY_FAKE",
        "params": {"temperature": 0, "max_tokens": 512, "max_attempts": 4},
        "price_input_per_mtok": Decimal("2.5"),
        "price_output_per_mtok": Decimal("10"),
        "max_concurrency": 4,
        "timeout_seconds": 5,
    }
    defaults.update(kw)
    return Judge.objects.create(name=name, **defaults)


def one_item_run(study: RatingStudy, judge: Judge) -> JuryRun:
    """A run of `judge` on the study's first item, not dispatched."""
    return services.start_run(
        study=study,
        judges=[judge],
        actor=None,
        filters={"item_ids": [study.items.first().pk]},
        dispatch=False,
    )


def call_ids(run: JuryRun) -> list[int]:
    """The run's calls, in the order they were created."""
    return list(run.calls.order_by("pk").values_list("pk", flat=True))


def judge_admin_form(**overrides: str) -> dict[str, str]:
    """A valid POST body for the judge admin form, with the given fields changed."""
    data = {
        "name": "new-judge",
        "provider": "openai",
        "model_id": "gpt-4o",
        "endpoint": "https://api.openai.com/v1",
        "api_key_env": "MEDHELM_JUDGE_KEY_OPENAI",
        "params": "{}",
        "weight": "1",
        "price_input_per_mtok": "0",
        "price_output_per_mtok": "0",
        "max_concurrency": "4",
        "requests_per_minute": "",
        "timeout_seconds": "120",
        "retry_budget_seconds": "900",
        "is_active": "on",
    }
    data.update(overrides)
    return data
