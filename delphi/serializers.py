"""API shapes of the Delphi app: the questionnaire's autosave."""

from __future__ import annotations

import math
from typing import Any

from rest_framework import serializers

DRAFT_KEYS = ("answers", "comprehensiveness", "round")


def _not_finite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


class DraftSerializer(serializers.Serializer):
    """{"round": n, "answers": {round_item_id: answer}, "comprehensiveness": n}.

    Each answer is passed on as sent: `services.save_answers` checks it and names the item
    in its error. `round` is the round the page was rendered for. Infinity, NaN and numbers
    past a float (1e400) are refused here, naming where they are: the service reads
    whole numbers with int(), which raises OverflowError on an infinite float.
    """

    round = serializers.IntegerField(required=False)
    answers = serializers.DictField(
        required=False,
        default=dict,
        error_messages={"not_a_dict": "must be an object keyed by item id"},
    )
    comprehensiveness = serializers.JSONField(required=False, allow_null=True, default=None)

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        # A misspelt key would otherwise be dropped silently and the answers not saved.
        if isinstance(data, dict):
            unknown = set(data) - set(DRAFT_KEYS)
            if unknown:
                raise serializers.ValidationError(
                    {"detail": f"unknown key(s) {sorted(unknown)}; allowed: {sorted(DRAFT_KEYS)}"}
                )
            _refuse_numbers_not_finite(data)
        return super().to_internal_value(data)


def _refuse_numbers_not_finite(data: dict[str, Any]) -> None:
    """A ValidationError naming the first answer field, or comprehensiveness, holding an
    infinite or NaN number (form data holds text only, so this is about JSON)."""
    if _not_finite(data.get("comprehensiveness")):
        raise serializers.ValidationError(
            {"comprehensiveness": f"must be a whole number 1-5, got {data['comprehensiveness']}"}
        )
    answers = data.get("answers")
    for key, answer in answers.items() if isinstance(answers, dict) else ():
        fields = answer.items() if isinstance(answer, dict) else [("", answer)]
        for name, value in fields:
            if _not_finite(value):
                where = f"answers[{key}]" + (f".{name}" if name else "")
                raise serializers.ValidationError(
                    {"detail": f"{where}: must be a finite number, got {value}"}
                )


class DraftSavedSerializer(serializers.Serializer):
    saved_at = serializers.DateTimeField()
    updated_at_ms = serializers.IntegerField()
