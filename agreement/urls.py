"""Agreement report pages (``urlpatterns``, namespace "agreement") and API routes (``api``,
namespace "agreement-api"). medhelm_site/urls.py mounts them under a study:

    path("studies/<int:study_id>/agreement/", include("agreement.urls")),
    path("api/studies/<int:study_id>/agreement/", include(agreement_urls.api)),
"""

from django.urls import path

from agreement import api as api_views
from agreement import archive_views, planning_views, views

app_name = "agreement"

urlpatterns = [
    path("", views.reports, name="reports"),
    path("<int:report_id>/", views.report, name="report"),
    path("<int:report_id>/recompute/", views.recompute, name="recompute"),
    path("<int:report_id>/machine-status/", views.machine_status, name="machine-status"),
    path("<int:report_id>/report.<str:fmt>", views.report_export, name="export"),
    path("<int:report_id>/figures/<slug:key>.<str:fmt>", views.report_figure, name="figure"),
    path("<int:report_id>/scores/<str:fmt>/", views.report_scores, name="scores"),
    path("jobs/<int:job_id>/", views.job, name="job"),
    path("jobs/<int:job_id>/status.json", views.job_status, name="job-status"),
    path("archive.zip", archive_views.study_archive, name="archive"),
    path("plan/", planning_views.plan, name="plan"),
    path(
        "plan/simulations/<str:task_id>/",
        planning_views.plan_simulation,
        name="plan-simulation",
    ),
    path(
        "plan/simulations/<str:task_id>/status.json",
        planning_views.plan_simulation_status,
        name="plan-simulation-status",
    ),
    path(
        "plan/simulations/<str:task_id>/cancel/",
        planning_views.plan_simulation_cancel,
        name="plan-simulation-cancel",
    ),
]

api_urlpatterns = [
    path("reports/", api_views.ReportsApi.as_view(), name="reports"),
    path("reports/<int:report_id>/", api_views.ReportApi.as_view(), name="report"),
    path("reports/<int:report_id>/recompute/", api_views.RecomputeApi.as_view(), name="recompute"),
    path("reports/<int:report_id>/csv/", api_views.ReportCsvApi.as_view(), name="csv"),
    path("reports/<int:report_id>/pdf/", api_views.ReportPdfApi.as_view(), name="pdf"),
    path("reports/<int:report_id>/latex/", api_views.ReportLatexApi.as_view(), name="latex"),
    path(
        "reports/<int:report_id>/markdown/", api_views.ReportMarkdownApi.as_view(), name="markdown"
    ),
    path("reports/<int:report_id>/methods/", api_views.ReportMethodsApi.as_view(), name="methods"),
    path(
        "reports/<int:report_id>/figures/<slug:key>/<str:fmt>/",
        api_views.ReportFigureApi.as_view(),
        name="figure",
    ),
    path(
        "reports/<int:report_id>/scores/<str:fmt>/",
        api_views.ReportScoresApi.as_view(),
        name="scores",
    ),
    path("jobs/<int:job_id>/", api_views.ReportJobApi.as_view(), name="job"),
]

#: For ``include(agreement.urls.api)`` under "api/studies/<int:study_id>/agreement/".
api = (api_urlpatterns, "agreement-api")
