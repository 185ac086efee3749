from django.urls import path

from annotation import views

app_name = "annotation"

urlpatterns = [
    path("<int:study_id>/", views.study_overview, name="study"),
    path("<int:study_id>/queue/", views.queue, name="queue"),
]
