"""API tokens over the API: log in with a password for a token (throttled like the login
page), list your tokens, revoke one. Staff list and revoke anybody's."""

from __future__ import annotations

from django.contrib.auth import authenticate, get_user_model
from django.http import Http404, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from medhelm_site.accounts import selectors, services
from medhelm_site.accounts.lockout import lockout_response
from medhelm_site.accounts.models import ApiToken
from medhelm_site.accounts.serializers import (
    LockedSerializer,
    LoginSerializer,
    NewTokenSerializer,
    TokenSerializer,
)


class TokenLoginApi(APIView):
    """A new API token for a username and password. Wrong passwords count towards the
    login lockout (django-axes) exactly as on the login page; a locked account answers 429."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    # No OPTIONS description for anonymous callers: the only method is POST.
    metadata_class = None

    @extend_schema(
        request=LoginSerializer,
        responses={
            201: NewTokenSerializer,
            400: OpenApiResponse(description="A field is missing or too long."),
            401: OpenApiResponse(description="Wrong username or password."),
            429: LockedSerializer,
        },
    )
    def post(self, request: Request) -> Response | HttpResponse:
        form = LoginSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        username = form.validated_data["username"]
        user = authenticate(request, username=username, password=form.validated_data["password"])
        if getattr(request, "axes_locked_out", False):
            return lockout_response(request, None, {"username": username})
        if user is None or not user.is_active:
            return Response(
                {"detail": "Wrong username or password."}, status=status.HTTP_401_UNAUTHORIZED
            )
        token, secret = services.create_token(user=user, name=form.validated_data["name"])
        data = NewTokenSerializer(token).data
        data["token"] = secret
        return Response(data, status=status.HTTP_201_CREATED)


def _owner_filter(request: Request):
    username = request.query_params.get("user")
    if username is None:
        return selectors.tokens_of(user=request.user)
    if not request.user.is_staff:
        raise Http404("Only staff list another user's tokens.")
    user_model = get_user_model()
    return selectors.all_tokens().filter(**{f"user__{user_model.USERNAME_FIELD}": username})


class TokensApi(APIView):
    """Your API tokens still in force (staff: ?user=<username> for another's)."""

    @extend_schema(
        parameters=[OpenApiParameter("user", OpenApiTypes.STR, required=False)],
        responses={200: TokenSerializer(many=True)},
    )
    def get(self, request: Request) -> Response:
        return Response(TokenSerializer(_owner_filter(request), many=True).data)


class TokenApi(APIView):
    """Revoke one token: its owner, or staff."""

    @extend_schema(responses={204: None, 404: OpenApiResponse(description="No such token.")})
    def delete(self, request: Request, public_id: str) -> Response:
        token: ApiToken | None = selectors.find_token(public_id=public_id)
        if token is None or not services.may_manage_token(actor=request.user, token=token):
            raise Http404("No such token.")
        services.revoke_token(actor=request.user, token=token)
        return Response(status=status.HTTP_204_NO_CONTENT)
