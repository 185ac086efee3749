"""REST API for rating studies: input parsing and access checks, then one selector or service."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.generics import ListAPIView, RetrieveAPIView

from annotation import selectors
from annotation.access import Role, get_study_for_user
from annotation.models import RatingStudy
from annotation.serializers import QueueAssignmentSerializer, StudySerializer


class MyStudiesApi(ListAPIView):
    """Studies in which the requesting user has any active role."""

    serializer_class = StudySerializer

    def get_queryset(self):
        return (
            RatingStudy.objects.filter(
                memberships__user=self.request.user, memberships__is_active=True
            )
            .distinct()
            .prefetch_related("criteria")
            .order_by("-created_at", "id")
        )


class StudyDetailApi(RetrieveAPIView):
    serializer_class = StudySerializer

    def get_object(self) -> RatingStudy:
        study, _ = get_study_for_user(
            user=self.request.user, study_id=self.kwargs["study_id"], allowed_roles=Role.values
        )
        return study


@extend_schema(summary="My queue: the requesting clinician's assignments in their own order")
class MyQueueApi(ListAPIView):
    serializer_class = QueueAssignmentSerializer
    pagination_class = None

    def get_queryset(self):
        study, _ = get_study_for_user(
            user=self.request.user, study_id=self.kwargs["study_id"], allowed_roles=[Role.CLINICIAN]
        )
        return selectors.clinician_queue(study=study, user=self.request.user)
