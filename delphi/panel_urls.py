"""Panel pages: joining by invitation link, the round questionnaire, its autosave.

Included by delphi.urls (namespace "delphi") at its root, so these are /delphi/join/<token>/,
/delphi/<id>/round/ and so on.
"""

from django.urls import path

from delphi import api
from delphi.views import join, panel

urlpatterns = [
    path("join/<str:token>/", join.join, name="join"),
    path("<int:study_id>/round/", panel.round_page, name="panel_round"),
    path("<int:study_id>/round/draft/", api.DraftApi.as_view(), name="panel_draft"),
    path("<int:study_id>/round/suggest/", panel.suggest, name="panel_suggest"),
]
