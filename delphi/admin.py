from django.contrib import admin

from delphi import models


class NodeInline(admin.TabularInline):
    model = models.TaxonomyNode
    fk_name = "version"
    fields = ["kind", "name", "parent", "position", "identity"]
    readonly_fields = ["identity"]
    extra = 0
    show_change_link = True


@admin.register(models.TaxonomyVersion)
class TaxonomyVersionAdmin(admin.ModelAdmin):
    list_display = ["name", "status", "source", "released_at", "created_at"]
    list_filter = ["status", "source"]
    search_fields = ["name"]
    inlines = [NodeInline]


@admin.register(models.TaxonomyNode)
class TaxonomyNodeAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "version", "parent", "position"]
    list_filter = ["kind", "version"]
    search_fields = ["name"]
    list_select_related = ["version", "parent"]


class CoordinatorInline(admin.TabularInline):
    model = models.DelphiCoordinator
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(models.DelphiStudy)
class DelphiStudyAdmin(admin.ModelAdmin):
    list_display = ["title", "status", "draft_taxonomy", "protocol_locked_at", "created_at"]
    list_filter = ["status"]
    search_fields = ["title"]
    readonly_fields = ["protocol_hash", "protocol_locked_at"]
    inlines = [CoordinatorInline]


@admin.register(models.Panelist)
class PanelistAdmin(admin.ModelAdmin):
    list_display = [
        "pseudonym",
        "study",
        "stakeholder_group",
        "specialty",
        "joined_at",
        "withdrawn_at",
    ]
    list_filter = ["study", "stakeholder_group"]
    search_fields = ["pseudonym", "email"]
    exclude = ["invite_token_hash"]


@admin.register(models.Round)
class RoundAdmin(admin.ModelAdmin):
    list_display = ["study", "number", "status", "opened_at", "closed_at"]
    list_filter = ["status"]


@admin.register(models.RoundItem)
class RoundItemAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "round", "item_version", "position"]
    list_filter = ["kind"]
    search_fields = ["name"]


@admin.register(models.PanelistRound)
class PanelistRoundAdmin(admin.ModelAdmin):
    list_display = ["panelist", "round", "status", "submitted_at"]
    list_filter = ["status"]


@admin.register(models.Response)
class ResponseAdmin(admin.ModelAdmin):
    list_display = ["panelist", "round_item", "rating", "unable_to_rate", "is_draft", "updated_at"]
    list_filter = ["is_draft", "unable_to_rate"]


@admin.register(models.Suggestion)
class SuggestionAdmin(admin.ModelAdmin):
    list_display = ["kind", "round", "panelist", "status", "triaged_at"]
    list_filter = ["kind", "status"]


@admin.register(models.RoundItemStatistics)
class RoundItemStatisticsAdmin(admin.ModelAdmin):
    list_display = ["round_item", "group", "n_rated", "median", "iqr", "disagreement", "outcome"]


@admin.register(models.DelphiAuditEvent)
class DelphiAuditEventAdmin(admin.ModelAdmin):
    list_display = ["at", "study", "actor", "action", "target"]
    list_filter = ["action"]

    def has_change_permission(self, request, obj=None):  # audit rows are append-only
        return False

    def has_delete_permission(self, request, obj=None):
        return False
