"""Delphi pages, mounted at /delphi/. Coordinator pages live in delphi.views.coordinator,
panel pages (invitation, questionnaire) in delphi.panel_urls."""

from django.urls import include, path

from delphi.views import coordinator

app_name = "delphi"

# Round actions are POSTs on the round they act on; study actions on the study.
round_urls = [
    path("", coordinator.round_page, name="round_detail"),
    path("open/", coordinator.open_round, name="round_open"),
    path("remind/", coordinator.send_reminders, name="round_remind"),
    path("close/", coordinator.close_round, name="round_close"),
    path("analyse/", coordinator.analyse_round, name="round_analyse"),
    path("feedback/", coordinator.release_feedback, name="round_feedback"),
    path(
        "suggestions/<int:suggestion_id>/triage/",
        coordinator.triage_suggestion,
        name="round_triage",
    ),
]

urlpatterns = [
    path("new/", coordinator.create_study, name="create"),
    path("<int:study_id>/", coordinator.study_page, name="study"),
    path("<int:study_id>/protocol/", coordinator.protocol_page, name="protocol"),
    path(
        "<int:study_id>/protocol/taxonomy/",
        coordinator.change_taxonomy,
        name="protocol_taxonomy",
    ),
    path("<int:study_id>/protocol/lock/", coordinator.lock_protocol, name="protocol_lock"),
    path("<int:study_id>/panel/", coordinator.panel_page, name="panelists"),
    path(
        "<int:study_id>/panel/<int:panelist_id>/renew/",
        coordinator.renew_invitation,
        name="panelist_renew",
    ),
    path(
        "<int:study_id>/panel/<int:panelist_id>/withdraw/",
        coordinator.withdraw_panelist,
        name="panelist_withdraw",
    ),
    path("<int:study_id>/rounds/next/", coordinator.start_next_round, name="round_next"),
    path("<int:study_id>/rounds/<int:number>/", include(round_urls)),
    path("<int:study_id>/finish/", coordinator.finish_study, name="finish"),
    path("<int:study_id>/release/", coordinator.release_taxonomy, name="release"),
    path("<int:study_id>/export/<str:name>", coordinator.export, name="export"),
    path("", include("delphi.panel_urls")),
]
