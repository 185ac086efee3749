"""Staff see every API token in the admin and revoke them through the service (with an
audit row), and the single sign-on bindings, released through the service too; lockouts are
lifted on /accounts/lockouts/ or with `manage.py unlock_account`."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from medhelm_site.accounts import services
from medhelm_site.accounts.models import ApiToken, SsoIdentity


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("public_id", "name", "user", "created", "expiry")
    search_fields = ("name", "user__username")
    fields = ("name", "user", "created", "expiry")
    readonly_fields = fields
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # tokens are made by their owner, who alone sees the secret

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False  # revoked with the action below, which writes the audit row

    def get_actions(self, request: HttpRequest):
        actions = super().get_actions(request)
        return actions if request.user.is_staff else {}

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        tokens = list(queryset.select_related("user"))
        for token in tokens:
            services.revoke_token(actor=request.user, token=token)
        messages.success(request, f"{len(tokens)} token(s) revoked.")


@admin.register(SsoIdentity)
class SsoIdentityAdmin(admin.ModelAdmin):
    list_display = ("user", "issuer", "subject", "bound_at")
    search_fields = ("user__username", "user__email", "subject")
    fields = ("user", "issuer", "subject", "bound_at")
    readonly_fields = fields
    actions = ["unbind"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # bound only by a verified sign-in (sso.matching)

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False  # released with the action below, which writes the audit row

    def get_actions(self, request: HttpRequest):
        actions = super().get_actions(request)
        return actions if request.user.is_staff else {}

    @admin.action(description="Unbind the selected accounts from their sign-in subject")
    def unbind(self, request: HttpRequest, queryset: QuerySet[SsoIdentity]) -> None:
        identities = list(queryset.select_related("user"))
        for identity in identities:
            services.unbind_sso(actor=request.user, identity=identity)
        messages.success(request, f"{len(identities)} account(s) unbound.")
