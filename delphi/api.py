"""The questionnaire's autosave: POST /delphi/<study id>/round/draft/.

A DRF endpoint for questionnaire.js. Its replies keep the page script's contract: success
is {saved_at, updated_at_ms}; every refusal is {"error": "<one line>"} with 400 (a bad
request or answer, the service's message naming the item), 401 (logged out), 403/404
(access), 405 (not a POST) or 409 (the round is not the page's round, or none is open).
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import APIException, NotAuthenticated
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from delphi import selectors, services
from delphi.access import get_panelist_for_user
from delphi.serializers import DraftSavedSerializer, DraftSerializer
from medhelm_site.common.rest import BoundedJSONParser
from medhelm_site.domain_errors import api_exception_handler

LOGGED_OUT = "you are logged out: log in again; your answers stay in this browser"


class RoundConflict(APIException):
    """The page's round is not the one open now: its item ids belong to another round."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "round_conflict"


class _NumbersAsSentJSONParser(BoundedJSONParser):
    """Reads NaN and Infinity as the numbers they stand for, so that DraftSerializer refuses
    them naming the answer they are in (the strict parser's refusal names no field)."""

    strict = False


def _one_line(detail: Any) -> str:
    """DRF's error detail ({field: [messages]}, a list or a string) as one line; field
    names other than "detail" and "non_field_errors" lead their messages."""
    if isinstance(detail, dict):
        parts = []
        for key, value in detail.items():
            text = _one_line(value)
            parts.append(text if key in ("detail", "non_field_errors") else f"{key}: {text}")
        return "; ".join(parts)
    if isinstance(detail, list):
        return "; ".join(_one_line(value) for value in detail)
    return str(detail)


def draft_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """The site's API handler (a DelphiError is a 400), with the body the page reads."""
    if isinstance(exc, NotAuthenticated):
        # JSON, not a redirect to the login page: fetch() would follow it and see a 200.
        exc = NotAuthenticated(LOGGED_OUT)
    response = api_exception_handler(exc, context)
    if response is not None:
        response.data = {"error": _one_line(response.data)}
    return response


@method_decorator(never_cache, name="dispatch")
class DraftApi(APIView):
    """Autosave the panelist's answers to the open round as drafts. A bad answer saves
    nothing and answers 400 with the service's message, which names the item."""

    http_method_names = ["post"]
    parser_classes = [_NumbersAsSentJSONParser, FormParser, MultiPartParser]

    def get_exception_handler(self):
        return draft_exception_handler

    @extend_schema(request=DraftSerializer, responses=DraftSavedSerializer)
    def post(self, request: Request, study_id: int) -> Response:
        panelist = get_panelist_for_user(user=request.user, study_id=study_id)
        serializer = DraftSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        round_ = selectors.current_round_for_panel(study=panelist.study)
        if round_ is None:
            raise RoundConflict("no round is open")
        if "round" in data and data["round"] != round_.number:
            raise RoundConflict(
                f"round {data['round']} is no longer the current round: reload the page"
            )
        services.save_answers(
            panelist=panelist,
            round_=round_,
            answers=data["answers"],
            comprehensiveness=data["comprehensiveness"],
        )
        saved = {
            "saved_at": timezone.now(),
            "updated_at_ms": selectors.draft_version_ms(panelist=panelist, round_=round_),
        }
        return Response(DraftSavedSerializer(saved).data)
