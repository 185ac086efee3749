from django.urls import path

from annotation import api

app_name = "annotation-api"

urlpatterns = [
    path("studies/", api.MyStudiesApi.as_view(), name="studies"),
    path("studies/<int:study_id>/", api.StudyDetailApi.as_view(), name="study"),
    path("studies/<int:study_id>/queue/", api.MyQueueApi.as_view(), name="queue"),
]
