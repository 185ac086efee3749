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
    # A rater's assignment by its opaque handle (Assignment.handle), never by its id.
    path("assignments/<slug:handle>/", api.AssignmentApi.as_view(), name="assignment"),
    path("assignments/<slug:handle>/draft/", api.DraftApi.as_view(), name="assignment-draft"),
    path("assignments/<slug:handle>/submit/", api.SubmitApi.as_view(), name="assignment-submit"),
    path("assignments/<slug:handle>/flag/", api.FlagApi.as_view(), name="assignment-flag"),
]
