"""Delphi pages, mounted at /delphi/. Coordinator pages live in delphi.views.coordinator,
panel pages (invitation, questionnaire) in delphi.panel_urls."""

from django.urls import include, path

app_name = "delphi"

urlpatterns = [
    path("", include("delphi.panel_urls")),
]
