"""Staff see every API token in the admin and revoke them through the service (with an
audit row), and the single sign-on bindings, released through the service too; lockouts are
lifted on /accounts/lockouts/ or with `manage.py unlock_account`."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from medhelm_site.accounts import services
from medhelm_site.accounts.models import ApiToken, SsoIdentity


class _ReadOnlyWithAuditedAction(admin.ModelAdmin):
    """Rows staff see but neither add, edit nor delete by hand: each is made by its own flow
    and ended only by the admin action, which goes through the service and its audit row."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def get_actions(self, request: HttpRequest):
        actions = super().get_actions(request)
        return actions if request.user.is_staff else {}


@admin.register(ApiToken)
class ApiTokenAdmin(_ReadOnlyWithAuditedAction):
    """Made by their owner, who alone sees the secret; revoked with the action below."""

    list_display = ("public_id", "name", "user", "created", "expiry")
    search_fields = ("name", "user__username")
    fields = ("name", "user", "created", "expiry")
    readonly_fields = fields
    actions = ["revoke"]

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        tokens = list(queryset.select_related("user"))
        for token in tokens:
            services.revoke_token(actor=request.user, token=token)
        messages.success(request, f"{len(tokens)} token(s) revoked.")


@admin.register(SsoIdentity)
class SsoIdentityAdmin(_ReadOnlyWithAuditedAction):
    """Bound only by a verified sign-in (sso.matching); released with the action below."""

    list_display = ("user", "issuer", "subject", "bound_at")
    search_fields = ("user__username", "user__email", "subject")
    fields = ("user", "issuer", "subject", "bound_at")
    readonly_fields = fields
    actions = ["unbind"]

    @admin.action(description="Unbind the selected accounts from their sign-in subject")
    def unbind(self, request: HttpRequest, queryset: QuerySet[SsoIdentity]) -> None:
        identities = list(queryset.select_related("user"))
        for identity in identities:
            services.unbind_sso(actor=request.user, identity=identity)
        messages.success(request, f"{len(identities)} account(s) unbound.")
