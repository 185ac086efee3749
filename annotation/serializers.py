"""API shapes. Rater-facing serializers never include the model name, nor an item or
assignment id: a rater addresses an assignment by its opaque handle only."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.fields import empty

from annotation.models import Assignment, RatingStudy, RubricCriterion
from annotation.services import CRITERION_FIELDS


class CriterionSerializer(serializers.ModelSerializer):
    class Meta:
        model = RubricCriterion
        fields = list(CRITERION_FIELDS)


class StudySerializer(serializers.ModelSerializer):
    criteria = CriterionSerializer(many=True, read_only=True)
    is_locked = serializers.BooleanField(read_only=True)

    class Meta:
        model = RatingStudy
        fields = [
            "id",
            "name",
            "instructions",
            "ratings_per_item",
            "show_reference",
            "comment_required_at_or_below",
            "is_locked",
            "criteria",
        ]


class QueueItemSerializer(serializers.Serializer):
    input_text = serializers.CharField()
    taxonomy_node = serializers.CharField(source="taxonomy_node.name", default=None)


class QueueAssignmentSerializer(serializers.ModelSerializer):
    item = QueueItemSerializer(read_only=True)

    class Meta:
        model = Assignment
        fields = ["handle", "position", "status", "flagged", "submitted_at", "item"]


class AnswerSerializer(serializers.Serializer):
    value = serializers.JSONField(required=False, allow_null=True)
    cannot_assess = serializers.BooleanField(required=False, default=False)
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=10_000)


class AnswersSerializer(serializers.Serializer):
    """{"answers": {criterion_key: {value, cannot_assess, comment}}, "time_spent_seconds": 12.5}"""

    answers = serializers.DictField(child=AnswerSerializer())
    time_spent_seconds = serializers.FloatField(required=False, default=0.0, min_value=0)


class FlagSerializer(serializers.Serializer):
    flagged = serializers.BooleanField()
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=5_000)


class RaterItemSerializer(serializers.Serializer):
    """The rater's view of an assignment: no model name, no one else's ratings."""

    handle = serializers.CharField()
    position = serializers.IntegerField()
    status = serializers.CharField()
    flagged = serializers.BooleanField()
    flag_reason = serializers.CharField()
    input_text = serializers.CharField()
    context_text = serializers.CharField(allow_blank=True)
    reference_text = serializers.CharField(allow_null=True)
    output_text = serializers.CharField()
    area = serializers.CharField()
    time_spent_seconds = serializers.FloatField()
    updated_at_ms = serializers.IntegerField()
    answers = serializers.DictField()


class ItemSerializer(serializers.Serializer):
    """Coordinator's view of an item, model name included."""

    id = serializers.IntegerField(read_only=True)
    external_id = serializers.CharField()
    model_name = serializers.CharField()
    benchmark = serializers.CharField()
    taxonomy_node = serializers.CharField(source="taxonomy_node.name", default=None)
    input_text = serializers.CharField()
    reference_text = serializers.CharField()
    output_text = serializers.CharField()
    metadata = serializers.JSONField()


class RequiredBooleanField(serializers.BooleanField):
    """A boolean that must be sent in every body format. DRF reads a missing boolean in a
    form or multipart body as False (an unticked checkbox); for a field that changes state
    (unlocking a study) a missing value must be a 400, as it is in JSON."""

    default_empty_html = empty


class LockSerializer(serializers.Serializer):
    locked = RequiredBooleanField()


class MemberSerializer(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.ChoiceField(choices=["coordinator", "clinician", "researcher"])
