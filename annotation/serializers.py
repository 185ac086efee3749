"""API shapes. Rater-facing serializers never include the model name."""

from __future__ import annotations

from rest_framework import serializers

from annotation.models import Assignment, RatingStudy, RubricCriterion


class CriterionSerializer(serializers.ModelSerializer):
    class Meta:
        model = RubricCriterion
        fields = [
            "key",
            "label",
            "definition",
            "scale_min",
            "scale_max",
            "anchors",
            "allow_cannot_assess",
        ]


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
    id = serializers.IntegerField()
    input_text = serializers.CharField()
    taxonomy_node = serializers.CharField(source="taxonomy_node.name", default=None)


class QueueAssignmentSerializer(serializers.ModelSerializer):
    item = QueueItemSerializer(read_only=True)

    class Meta:
        model = Assignment
        fields = ["id", "position", "status", "flagged", "submitted_at", "item"]
