"""Joining a panel by a one-time invitation link: as the logged-in user, or with a new
account."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache

from delphi import services
from delphi.models import Panelist
from delphi.services import DelphiError


def _join_response(request: HttpRequest, template: str, context: dict, status: int) -> HttpResponse:
    response = render(request, template, context, status=status)
    # The token is in the URL: no Referer may carry it to another site; the link is
    # personal. Not "no-referrer": Chromium then posts the join form with "Origin: null",
    # which Django's CSRF origin check refuses.
    response.headers["Referrer-Policy"] = "same-origin"
    return response


def _accept(request: HttpRequest, token: str) -> Panelist:
    """Carry out the posted choice (join as this account, or create one); DelphiError when
    it cannot be done."""
    action = request.POST.get("action", "")
    if action == "join":
        if not request.user.is_authenticated:
            raise DelphiError("log in first, or create an account below")
        return services.accept_invitation(token=token, user=request.user)
    if action == "create":
        if request.user.is_authenticated:
            raise DelphiError(
                f"you are logged in as {request.user.get_username()}: join as that "
                "account, or log out first to create another"
            )
        password = request.POST.get("password1", "")
        if password != request.POST.get("password2", ""):
            raise DelphiError("password: the two passwords differ", field="password2")
        joined = services.create_account_and_accept(
            token=token, username=request.POST.get("username", "").strip(), password=password
        )
        # The account was just made with this password: no password check to throttle, so
        # the plain model backend (the site names two, so login() must be told which).
        login(request, joined.user, backend="django.contrib.auth.backends.ModelBackend")
        return joined
    raise DelphiError("choose how to join: with your account or a new one")


@never_cache
def join(request: HttpRequest, token: str) -> HttpResponse:
    """A one-time invitation link: join as the logged-in user, or create an account."""
    panelist = services.panelist_for_token(token)
    if panelist is None:
        return _join_response(request, "delphi/panel_join_invalid.html", {}, status=404)
    study = panelist.study
    errors: list[str] = []
    if request.method == "POST":
        try:
            _accept(request, token)
        except DelphiError as exc:
            errors = [exc.message]
        else:
            messages.success(request, f"You joined the panel of “{study.title}”.")
            return redirect("delphi:panel_round", study_id=study.pk)
    return _join_response(
        request,
        "delphi/panel_join.html",
        {"study": study, "errors": errors, "username": _posted_username(request)},
        status=400 if errors else 200,
    )


def _posted_username(request: HttpRequest) -> str:
    """The username a refused "create" post asked for, to show it again."""
    if (
        request.method == "POST"
        and request.POST.get("action") == "create"
        and not request.user.is_authenticated
    ):
        return request.POST.get("username", "").strip()
    return ""
