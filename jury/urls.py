from django.urls import path

from jury import views

app_name = "jury"

urlpatterns = [
    path("", views.runs, name="runs"),
    path("prompt/", views.prompt, name="prompt"),
    path("metrics/start/", views.start_metrics, name="metrics-start"),
    path("import/scores/", views.import_scores, name="import-scores"),
    path("export/scores-long.csv", views.export_scores_long, name="export-scores-long"),
    path("runs/<int:run_id>/", views.run_detail, name="run"),
    path("runs/<int:run_id>/status.json", views.run_status, name="run-status"),
    path("runs/<int:run_id>/calls.csv", views.run_calls_csv, name="run-calls"),
    path("runs/<int:run_id>/attempts.csv", views.run_attempts_csv, name="run-attempts"),
    path("runs/<int:run_id>/<str:action>/", views.run_action, name="run-action"),
]
