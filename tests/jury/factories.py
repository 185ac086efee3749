"""Judges on the fake provider, and runs, for the jury tests."""

from __future__ import annotations

from decimal import Decimal

from annotation.models import RatingStudy
from jury import services
from jury.models import Judge, JuryRun
from tests.support.fake_provider import FakeProvider


def make_judge(fake: FakeProvider, *, name="gpt-judge", provider="openai", **kw) -> Judge:
    """A judge that calls the fake provider (OpenAI or Anthropic protocol); kw overrides."""
    endpoint = fake.openai_url if provider == "openai" else fake.anthropic_url
    defaults = dict(
        provider=provider,
        model_id=f"{name}-model",
        endpoint=endpoint,
        api_key_env="FAKE_PROVIDER_KEY",
        params={"temperature": 0, "max_tokens": 512, "max_attempts": 4},
        price_input_per_mtok=Decimal("2.5"),
        price_output_per_mtok=Decimal("10"),
        max_concurrency=4,
        timeout_seconds=5,
    )
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
