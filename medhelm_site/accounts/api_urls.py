from django.urls import path

from medhelm_site.accounts import api

app_name = "accounts-api"

urlpatterns = [
    path("login/", api.TokenLoginApi.as_view(), name="login"),
    path("tokens/", api.TokensApi.as_view(), name="tokens"),
    path("tokens/<slug:public_id>/", api.TokenApi.as_view(), name="token"),
]
