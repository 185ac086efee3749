from django.urls import path

from annotation import api

app_name = "annotation-api"

urlpatterns = [
    path("studies/", api.MyStudiesApi.as_view(), name="studies"),
    path("studies/<int:study_id>/", api.StudyDetailApi.as_view(), name="study"),
    path("studies/<int:study_id>/criteria/", api.CriteriaApi.as_view(), name="criteria"),
    path("studies/<int:study_id>/items/", api.ItemsApi.as_view(), name="items"),
    path("studies/<int:study_id>/queue/", api.MyQueueApi.as_view(), name="queue"),
    path("studies/<int:study_id>/lock/", api.LockApi.as_view(), name="lock"),
    path("studies/<int:study_id>/members/", api.MembersApi.as_view(), name="members"),
    path("studies/<int:study_id>/ratings/", api.RatingsExportApi.as_view(), name="ratings-export"),
    path("assignments/<int:assignment_id>/", api.AssignmentApi.as_view(), name="assignment"),
    path("assignments/<int:assignment_id>/draft/", api.DraftApi.as_view(), name="assignment-draft"),
    path(
        "assignments/<int:assignment_id>/submit/", api.SubmitApi.as_view(), name="assignment-submit"
    ),
    path("assignments/<int:assignment_id>/flag/", api.FlagApi.as_view(), name="assignment-flag"),
]
