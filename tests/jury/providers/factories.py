"""Requests, clients and checks shared by the provider tests."""

from __future__ import annotations

import traceback

import pytest

from jury.providers import CriterionSpec, JudgeClient, JudgeRequest, ProviderError, client_for
from tests.support.fake_provider import FakeProvider

API_KEY = "sk-test-Zq8u1n7Wf3kLr0PxY2vB"
PROTOCOLS = ("openai", "anthropic")

CRITERIA = (
    CriterionSpec("accuracy", "Accuracy", "Is it correct?", 1, 5, {"1": "Wrong", "5": "Right"}),
    CriterionSpec("completeness", "Completeness", "Is it complete?", 1, 5, {}),
    CriterionSpec("clarity", "Clarity", "Is it clear?", 1, 5, {}),
)


def make_request(prompt: str = "Rate this answer.", **kwargs) -> JudgeRequest:
    kwargs.setdefault("timeout_seconds", 5.0)
    return JudgeRequest(system="You are a judge.", prompt=prompt, criteria=CRITERIA, **kwargs)


def make_client(
    fake: FakeProvider,
    protocol: str,
    *,
    api_key: str | None = API_KEY,
    structured_output: str = "",
    **params,
) -> JudgeClient:
    endpoint = fake.openai_url if protocol == "openai" else fake.anthropic_url
    return client_for(
        provider=protocol,
        model_id=f"{protocol}-judge",
        endpoint=endpoint,
        api_key=api_key,
        params=params,
        structured_output=structured_output,
    )


def failure(client: JudgeClient, request: JudgeRequest | None = None) -> ProviderError:
    """The ProviderError a call raises (the test fails if it raises none)."""
    with pytest.raises(ProviderError) as info:
        client.complete(request or make_request())
    return info.value


def assert_key_hidden(exc: BaseException) -> None:
    text = "".join(traceback.format_exception(exc)) + repr(exc) + str(exc)
    assert API_KEY not in text
    assert "Zq8u1n7Wf3kLr0PxY2vB" not in text
