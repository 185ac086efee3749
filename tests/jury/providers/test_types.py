"""The provider-neutral pieces: Retry-After, the verdict schema, criterion specs and requests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from jury.providers import CriterionSpec, JudgeRequest, parse_retry_after, verdict_json_schema
from tests.jury.providers.factories import CRITERIA


def test_parse_retry_after_forms():
    now = 1_700_000_000.0
    date = format_datetime(datetime.fromtimestamp(now, UTC) + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"Retry-After": "12"}) == 12
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"Retry-After": date}, now=now) == pytest.approx(30)
    assert parse_retry_after({"Retry-After": "-3"}) == 0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


def test_verdict_json_schema_is_strict():
    schema = verdict_json_schema(CRITERIA)
    assert schema["required"] == ["accuracy", "completeness", "clarity"]
    assert schema["additionalProperties"] is False
    accuracy = schema["properties"]["accuracy"]
    assert accuracy["required"] == ["score", "explanation"]
    assert accuracy["additionalProperties"] is False
    assert accuracy["properties"]["score"]["type"] == "integer"
    assert (
        accuracy["properties"]["score"]["minimum"],
        accuracy["properties"]["score"]["maximum"],
    ) == (1, 5)
    assert accuracy["properties"]["explanation"] == {"type": "string"}


def test_criterion_spec_validates_and_freezes_anchors():
    anchors = {"1": "bad"}
    spec = CriterionSpec("accuracy", "Accuracy", "", 1, 5, anchors)
    anchors["1"] = "changed"
    assert spec.anchors["1"] == "bad"
    with pytest.raises(TypeError):
        spec.anchors["2"] = "x"  # type: ignore[index]
    with pytest.raises(ValueError):
        CriterionSpec("accuracy", "Accuracy", "", 5, 5, {})
    with pytest.raises(ValueError, match="unique"):
        JudgeRequest(system="", prompt="p", criteria=(spec, spec))
