from django.urls import path

from annotation.views import (
    attention_checks,
    audit_log,
    calibration,
    coordinator,
    home,
    long_imports,
    rating,
    sampling,
    watch,
)

app_name = "annotation"

urlpatterns = [
    path("new/", coordinator.create_study, name="create"),
    path("audit/", audit_log.audit_log, name="audit"),
    path("audit/export.csv", audit_log.audit_log_csv, name="audit-export"),
    path("<int:study_id>/", coordinator.dashboard_page, name="study"),
    path("<int:study_id>/settings/", coordinator.edit_study, name="settings"),
    path("<int:study_id>/items/<int:item_id>/", coordinator.item_page, name="item"),
    path("<int:study_id>/members/", coordinator.members, name="members"),
    path("<int:study_id>/import/", coordinator.import_items, name="import"),
    path("<int:study_id>/checks/", attention_checks.checks_page, name="checks"),
    path(
        "<int:study_id>/export/attention-checks.csv",
        attention_checks.export_checks,
        name="export-checks",
    ),
    path("<int:study_id>/calibration/", calibration.calibration_page, name="calibration"),
    path("<int:study_id>/calibration/mine/", calibration.my_calibration, name="my-calibration"),
    path("<int:study_id>/sample/", sampling.sample_page, name="sample"),
    path("<int:study_id>/assign/", coordinator.assign, name="assign"),
    path("<int:study_id>/lock/", coordinator.lock, name="lock"),
    path("<int:study_id>/watch/refresh/", watch.refresh_watch, name="watch-refresh"),
    path("<int:study_id>/import/ratings/", coordinator.import_ratings, name="import-ratings"),
    path(
        "<int:study_id>/import/<int:job_id>/errors.csv",
        long_imports.import_errors,
        name="import-errors",
    ),
    path(
        "<int:study_id>/export/ratings-long.csv",
        coordinator.export_ratings_long,
        name="export-ratings-long",
    ),
    path("<int:study_id>/export/ratings.<str:fmt>", coordinator.export_ratings, name="export"),
    path("<int:study_id>/queue/", home.queue, name="queue"),
    path("<int:study_id>/rate/", rating.resume, name="resume"),
    # A rater's assignment by its opaque handle (Assignment.handle), never by its id.
    path("<int:study_id>/rate/<slug:handle>/", rating.rate, name="rate"),
]
