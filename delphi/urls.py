"""Delphi pages, mounted at /delphi/. Coordinator pages live in delphi.views (setup,
panelists, rounds, release, exports); panel pages (invitation, questionnaire) in
delphi.panel_urls."""

from django.urls import include, path

from delphi.views import exports, panelists, release, rounds, setup

app_name = "delphi"

# Round actions are POSTs on the round they act on; study actions on the study.
round_urls = [
    path("", rounds.round_page, name="round_detail"),
    path("open/", rounds.open_round, name="round_open"),
    path("remind/", rounds.send_reminders, name="round_remind"),
    path("close/", rounds.close_round, name="round_close"),
    path("analyse/", rounds.analyse_round, name="round_analyse"),
    path("feedback/", rounds.release_feedback, name="round_feedback"),
    path(
        "suggestions/<int:suggestion_id>/triage/",
        rounds.triage_suggestion,
        name="round_triage",
    ),
]

urlpatterns = [
    path("new/", setup.create_study, name="create"),
    path("<int:study_id>/", setup.study_page, name="study"),
    path("<int:study_id>/protocol/", setup.protocol_page, name="protocol"),
    path("<int:study_id>/protocol/taxonomy/", setup.change_taxonomy, name="protocol_taxonomy"),
    path("<int:study_id>/protocol/lock/", setup.lock_protocol, name="protocol_lock"),
    path("<int:study_id>/panel/", panelists.panel_page, name="panelists"),
    path(
        "<int:study_id>/panel/<int:panelist_id>/renew/",
        panelists.renew_invitation,
        name="panelist_renew",
    ),
    path(
        "<int:study_id>/panel/<int:panelist_id>/withdraw/",
        panelists.withdraw_panelist,
        name="panelist_withdraw",
    ),
    path("<int:study_id>/rounds/next/", rounds.start_next_round, name="round_next"),
    path("<int:study_id>/rounds/<int:number>/", include(round_urls)),
    path("<int:study_id>/finish/", release.finish_study, name="finish"),
    path("<int:study_id>/release/", release.release_taxonomy, name="release"),
    path("<int:study_id>/export/<str:name>", exports.export, name="export"),
    path("", include("delphi.panel_urls")),
]
