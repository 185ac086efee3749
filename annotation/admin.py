from django.contrib import admin

from annotation import models


@admin.register(models.RubricTemplate)
class RubricTemplateAdmin(admin.ModelAdmin):
    list_display = ["name"]


class CriterionInline(admin.StackedInline):
    model = models.RubricCriterion
    extra = 0


class MembershipInline(admin.TabularInline):
    model = models.StudyMembership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(models.RatingStudy)
class RatingStudyAdmin(admin.ModelAdmin):
    list_display = ["name", "ratings_per_item", "taxonomy_version", "locked_at", "created_at"]
    search_fields = ["name"]
    inlines = [CriterionInline, MembershipInline]


@admin.register(models.Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ["external_id", "study", "model_name", "benchmark", "taxonomy_node"]
    list_filter = ["study", "model_name"]
    search_fields = ["external_id", "input_text"]
    list_select_related = ["study", "taxonomy_node"]
    raw_id_fields = ["taxonomy_node"]


@admin.register(models.StudyMembership)
class StudyMembershipAdmin(admin.ModelAdmin):
    list_display = ["study", "user", "role", "pseudonym", "is_active"]
    list_filter = ["role", "is_active"]
    search_fields = ["user__username", "pseudonym"]


@admin.register(models.Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["study", "clinician", "position", "item", "status", "flagged"]
    list_filter = ["status", "flagged", "study"]
    raw_id_fields = ["item"]
    list_select_related = ["study", "clinician", "item"]


@admin.register(models.Rating)
class RatingAdmin(admin.ModelAdmin):
    list_display = [
        "assignment",
        "criterion",
        "value",
        "cannot_assess",
        "first_value",
        "updated_at",
    ]
    raw_id_fields = ["assignment"]


@admin.register(models.ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ["study", "file_format", "status", "processed_rows", "total_rows", "created_at"]
    list_filter = ["status"]


@admin.register(models.AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["at", "study", "actor", "action", "target_type", "target_id"]
    list_filter = ["action"]

    def has_change_permission(self, request, obj=None):  # audit rows are append-only
        return False

    def has_delete_permission(self, request, obj=None):
        return False
