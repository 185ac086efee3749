from django.urls import path

from medhelm_site.accounts import views
from medhelm_site.accounts.sso import views as sso_views

urlpatterns = [
    path("logout/", views.LogoutView.as_view(), name="logout"),
    path("sso/start/", sso_views.SsoStartView.as_view(), name="sso-start"),
    path("sso/callback/", sso_views.SsoCallbackView.as_view(), name="sso-callback"),
    path("tokens/", views.tokens, name="account-tokens"),
    path("tokens/<slug:public_id>/revoke/", views.revoke_token, name="account-token-revoke"),
    path("lockouts/", views.lockouts, name="account-lockouts"),
]
