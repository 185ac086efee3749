"""API shapes of the Delphi app: the questionnaire's autosave."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

DRAFT_KEYS = ("answers", "comprehensiveness", "round")


class DraftSerializer(serializers.Serializer):
    """{"round": n, "answers": {round_item_id: answer}, "comprehensiveness": n}.

    Each answer is passed on as sent: `services.save_answers` checks it and names the item
    in its error. `round` is the round the page was rendered for.
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
        return super().to_internal_value(data)


class DraftSavedSerializer(serializers.Serializer):
    saved_at = serializers.DateTimeField()
    updated_at_ms = serializers.IntegerField()
