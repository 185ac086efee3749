"""REST API for rating studies: input parsing and access checks, then one selector or service.

Access follows the pages: 404 for a study (or assignment) the user may not know exists,
403 for a role that may not do this. A rater's assignment is addressed by its opaque handle,
never by an id (ids follow import order, which would group outputs by model). An AnnotationError from a service answers 400 with the
field and reason (medhelm_site.domain_errors.api_exception_handler); anything else is a 500.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.generics import ListAPIView, RetrieveAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors, services
from annotation.access import (
    CALIBRATION_FIRST,
    STUDY_READERS,
    Role,
    get_study_for_user,
    rater_assignment,
)
from annotation.models import Assignment, RatingStudy
from annotation.serializers import (
    AnswersSerializer,
    CriterionSerializer,
    FlagSerializer,
    ItemSerializer,
    LockSerializer,
    MemberSerializer,
    QueueAssignmentSerializer,
    RaterItemSerializer,
    StudySerializer,
)
from medhelm_site.common.rest import loads_json


def _own_assignment(request: Request, handle: str) -> Assignment:
    """The requesting clinician's own assignment, else 404 (it is none of their business)."""
    assignment = rater_assignment(user=request.user, handle=handle)
    if assignment is None:
        raise Http404("No such assignment in your queue.")
    if assignment.calibration_open and not assignment.is_calibration:
        raise PermissionDenied(CALIBRATION_FIRST)
    return assignment


def _answers(data) -> tuple[dict[str, services.CriterionAnswer], float]:
    # A page closing sends its last draft as a form field "payload" (keepalive beacon).
    if hasattr(data, "get") and isinstance(data.get("payload"), str):
        try:
            data = loads_json(data["payload"])
        except ParseError as exc:
            raise ValidationError({"payload": [exc.detail]}) from None
    serializer = AnswersSerializer(data=data)
    serializer.is_valid(raise_exception=True)
    answers = {
        key: services.CriterionAnswer(
            value=a.get("value"),
            cannot_assess=a.get("cannot_assess", False),
            comment=a.get("comment", ""),
        )
        for key, a in serializer.validated_data["answers"].items()
    }
    return answers, serializer.validated_data["time_spent_seconds"]


class MyStudiesApi(ListAPIView):
    """Studies in which the requesting user has any active role."""

    serializer_class = StudySerializer

    def get_queryset(self):
        return selectors.studies_with_any_role(user=self.request.user)


class StudyDetailApi(RetrieveAPIView):
    serializer_class = StudySerializer

    def get_object(self) -> RatingStudy:
        study, _ = get_study_for_user(
            user=self.request.user, study_id=self.kwargs["study_id"], allowed_roles=Role.values
        )
        return study


class CriteriaApi(ListAPIView):
    serializer_class = CriterionSerializer
    pagination_class = None

    def get_queryset(self):
        study, _ = get_study_for_user(
            user=self.request.user, study_id=self.kwargs["study_id"], allowed_roles=Role.values
        )
        return study.criteria.all()


class ItemsApi(ListAPIView):
    """The study's items with model names: coordinators only (raters are blinded)."""

    serializer_class = ItemSerializer

    def get_queryset(self):
        study, _ = get_study_for_user(
            user=self.request.user,
            study_id=self.kwargs["study_id"],
            allowed_roles=[Role.COORDINATOR],
        )
        return selectors.study_items(study=study)


@extend_schema(summary="My queue: the requesting clinician's assignments in their own order")
class MyQueueApi(ListAPIView):
    serializer_class = QueueAssignmentSerializer
    pagination_class = None

    def get_queryset(self):
        study, _ = get_study_for_user(
            user=self.request.user, study_id=self.kwargs["study_id"], allowed_roles=[Role.CLINICIAN]
        )
        return selectors.clinician_queue(study=study, user=self.request.user)


class AssignmentApi(APIView):
    @extend_schema(
        responses=RaterItemSerializer, summary="One of my assignments, as a rater sees it"
    )
    def get(self, request: Request, handle: str) -> Response:
        assignment = _own_assignment(request, handle)
        return Response(RaterItemSerializer(selectors.rater_item(assignment=assignment)).data)


def _write_answers(request: Request, handle: str, service) -> Response:
    """Parse the answers, run the draft or submit service, answer with the rater's view."""
    assignment = _own_assignment(request, handle)
    answers, seconds = _answers(request.data)
    assignment = service(
        assignment_id=assignment.pk,
        clinician=request.user,
        answers=answers,
        time_spent_seconds=seconds,
    )
    return Response(RaterItemSerializer(selectors.rater_item(assignment=assignment)).data)


class DraftApi(APIView):
    """Autosave. PUT (or POST, for a closing page) the answers entered so far.

    A submitted assignment refuses answers that differ from its submitted ones (400 on
    "answers"): only a submit revises it. {"answers": {}} with time_spent_seconds adds time.
    """

    @extend_schema(request=AnswersSerializer, responses=RaterItemSerializer)
    def put(self, request: Request, handle: str) -> Response:
        return _write_answers(request, handle, services.save_draft)

    post = put


class SubmitApi(APIView):
    """Submit or revise every criterion of an assignment. Idempotent."""

    @extend_schema(request=AnswersSerializer, responses=RaterItemSerializer)
    def post(self, request: Request, handle: str) -> Response:
        assignment = _own_assignment(request, handle)
        answers, seconds = _answers(request.data)
        # The answer is built from what the service wrote (no read back: the hot path).
        submitted = services.submit_answers(
            assignment_id=assignment.pk,
            clinician=request.user,
            answers=answers,
            time_spent_seconds=seconds,
        )
        if assignment.is_calibration:  # the last one records the rater's calibration
            services.advance_calibration(study=assignment.study, clinician=request.user)
        view = selectors.rater_item(assignment=submitted.assignment, answers=submitted.answers)
        return Response(RaterItemSerializer(view).data)


class FlagApi(APIView):
    @extend_schema(request=FlagSerializer, responses=RaterItemSerializer)
    def post(self, request: Request, handle: str) -> Response:
        assignment = _own_assignment(request, handle)
        serializer = FlagSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        assignment = services.flag_assignment(
            assignment_id=assignment.pk, clinician=request.user, **serializer.validated_data
        )
        return Response(RaterItemSerializer(selectors.rater_item(assignment=assignment)).data)


class LockApi(APIView):
    @extend_schema(request=LockSerializer, responses=StudySerializer)
    def post(self, request: Request, study_id: int) -> Response:
        study, _ = get_study_for_user(
            user=request.user, study_id=study_id, allowed_roles=[Role.COORDINATOR]
        )
        serializer = LockSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        study = services.set_study_lock(
            study=study, locked=serializer.validated_data["locked"], actor=request.user
        )
        return Response(StudySerializer(study).data)


class MembersApi(APIView):
    """Add (POST) or remove (DELETE) a member; clinician changes rebalance unstarted work."""

    @extend_schema(request=MemberSerializer, responses={201: None})
    def post(self, request: Request, study_id: int) -> Response:
        study, user, role = self._parse(request, study_id)
        membership = services.add_member(study=study, user=user, role=role, actor=request.user)
        return Response(
            {"username": user.get_username(), "role": role, "pseudonym": membership.pseudonym},
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(request=MemberSerializer, responses={204: None})
    def delete(self, request: Request, study_id: int) -> Response:
        study, user, role = self._parse(request, study_id)
        services.remove_member(study=study, user=user, role=role, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _parse(self, request: Request, study_id: int):
        study, _ = get_study_for_user(
            user=request.user, study_id=study_id, allowed_roles=[Role.COORDINATOR]
        )
        serializer = MemberSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        username = serializer.validated_data["username"]
        user = selectors.account_by_username(username=username)
        if user is None:
            raise ValidationError({"username": f"no user {username!r}"})
        return study, user, serializer.validated_data["role"]


class RatingsExportApi(APIView):
    """Submitted ratings in long format (JSON); pseudonyms only. CSV: the page's export link."""

    @extend_schema(
        responses=OpenApiTypes.OBJECT,
        parameters=[
            OpenApiParameter(
                "values", str, enum=["latest", "first"], description="latest (default) or first"
            )
        ],
    )
    def get(self, request: Request, study_id: int) -> Response:
        study, _ = get_study_for_user(
            user=request.user, study_id=study_id, allowed_roles=STUDY_READERS
        )
        values = request.query_params.get("values", "latest")
        if values not in ("latest", "first"):
            raise ValidationError({"values": "must be 'latest' or 'first'"})
        rows = list(selectors.rating_export_rows(study=study, values=values))
        return Response(
            {"study": study.pk, "values": values, "columns": selectors.EXPORT_COLUMNS, "rows": rows}
        )
