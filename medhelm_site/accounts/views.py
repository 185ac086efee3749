"""Account pages: the login page (password, and single sign-on when configured), your API
tokens, the lockouts you may lift, and the logout that also clears the browser's stored
drafts."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from knox.settings import knox_settings

from medhelm_site.accounts import selectors, services
from medhelm_site.accounts.errors import AccountError
from medhelm_site.accounts.sso.backend import REFUSAL_SESSION_KEY
from medhelm_site.accounts.sso.config import sso_config
from medhelm_site.accounts.sso.logout import ID_TOKEN_SESSION_KEY, provider_logout_url

# Clear-Site-Data: "storage" makes the browser drop this site's localStorage (the rating
# page's drafts), sessionStorage and IndexedDB; medhelm_site/accounts/static/accounts/logged_out.js
# clears the drafts on the next page for a browser that ignores the header.
CLEAR_SITE_DATA = '"storage"'


def sso_login_context(request: HttpRequest) -> dict[str, object]:
    """What the login page shows of single sign-on: the provider's button (when configured)
    and why the last sign-in with it failed (once)."""
    config = sso_config()
    refusal = (
        request.session.pop(REFUSAL_SESSION_KEY, None) if hasattr(request, "session") else None
    )
    return {
        "sso_provider_name": config.provider_name if config is not None else None,
        "sso_refusal": refusal,
    }


class LoginView(auth_views.LoginView):
    """Django's login page, with the single sign-on button and its refusals."""

    def get_context_data(self, **kwargs: object) -> dict[str, object]:
        return {**super().get_context_data(**kwargs), **sso_login_context(self.request)}


class LogoutView(auth_views.LogoutView):
    """Django's logout (POST only), then the login page told that this was a logout; after a
    single sign-on, by way of the provider's logout (sso.logout)."""

    def get_success_url(self) -> str:
        return reverse("login") + "?logged_out=1"

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        id_token = request.session.get(ID_TOKEN_SESSION_KEY)
        response = super().post(request, *args, **kwargs)
        at_provider = provider_logout_url(
            id_token=id_token, return_to=request.build_absolute_uri(self.get_success_url())
        )
        if at_provider is not None:
            response = HttpResponseRedirect(at_provider)
        response["Clear-Site-Data"] = CLEAR_SITE_DATA
        return response


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    """Your API tokens; a POST makes a new one and shows its secret this once."""
    new_secret = None
    error = None
    if request.method == "POST":
        try:
            _, new_secret = services.create_token(
                user=request.user, name=request.POST.get("name", "")
            )
        except AccountError as exc:
            error = exc.message
    return render(
        request,
        "accounts/tokens.html",
        {
            "tokens": selectors.tokens_of(user=request.user),
            "new_secret": new_secret,
            "error": error,
            "ttl_days": knox_settings.TOKEN_TTL.days,
        },
        status=400 if error else 200,
    )


@login_required
@require_POST
def revoke_token(request: HttpRequest, public_id: str) -> HttpResponse:
    token = selectors.find_token(public_id=public_id)
    if token is None or not services.may_manage_token(actor=request.user, token=token):
        raise Http404("No such token.")
    services.revoke_token(actor=request.user, token=token)
    messages.success(request, f"Token {token.name or token.public_id} revoked.")
    return redirect("account-tokens")


@login_required
@require_http_methods(["GET", "POST"])
def lockouts(request: HttpRequest) -> HttpResponse:
    """Lockouts in force that you may lift (staff: all; a coordinator: the accounts wholly
    inside the studies they coordinate, selectors.unlockable_usernames); a POST lifts one."""
    if not selectors.may_lift_lockouts(user=request.user):
        raise Http404("Only staff and study coordinators lift lockouts.")
    error = None
    if request.method == "POST":
        username = request.POST.get("username", "")
        try:
            services.unlock(actor=request.user, username=username)
        except AccountError as exc:
            error = exc.message
        else:
            messages.success(request, f"{username} can log in again.")
            return redirect("account-lockouts")
    return render(
        request,
        "accounts/lockouts.html",
        {
            "lockouts": selectors.lockouts_visible_to(user=request.user),
            "administers": selectors.administers(user=request.user),
            "error": error,
        },
        status=403 if error else 200,
    )
