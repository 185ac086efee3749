from django.urls import path

from medhelm_site.accounts import views

urlpatterns = [
    path("logout/", views.LogoutView.as_view(), name="logout"),
    path("tokens/", views.tokens, name="account-tokens"),
    path("tokens/<slug:public_id>/revoke/", views.revoke_token, name="account-token-revoke"),
    path("lockouts/", views.lockouts, name="account-lockouts"),
]
