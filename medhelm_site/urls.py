from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from agreement import urls as agreement_urls
from annotation.views import home as annotation_home
from medhelm_site import health
from medhelm_site.accounts import views as account_views

_form = "registration/simple_form.html"
_message = "registration/message.html"

account_urls = [
    path("login/", account_views.LoginView.as_view(), name="login"),
    path(
        "password/change/",
        auth_views.PasswordChangeView.as_view(
            template_name=_form, extra_context={"button": "Change password"}
        ),
        name="password_change",
    ),
    path(
        "password/change/done/",
        auth_views.PasswordChangeDoneView.as_view(
            template_name=_message, extra_context={"message": "Your password was changed."}
        ),
        name="password_change_done",
    ),
    path(
        "password/reset/",
        auth_views.PasswordResetView.as_view(
            template_name=_form,
            email_template_name="registration/password_reset_email.txt",
            extra_context={"button": "Send reset link"},
        ),
        name="password_reset",
    ),
    path(
        "password/reset/sent/",
        auth_views.PasswordResetDoneView.as_view(
            template_name=_message,
            extra_context={
                "message": "If an account has that address, a reset link is on its way."
            },
        ),
        name="password_reset_done",
    ),
    path(
        "password/reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(
            template_name=_form, extra_context={"button": "Set password"}
        ),
        name="password_reset_confirm",
    ),
    path(
        "password/reset/done/",
        auth_views.PasswordResetCompleteView.as_view(
            template_name=_message,
            extra_context={"message": "Your password is set. You can log in now."},
        ),
        name="password_reset_complete",
    ),
]

urlpatterns = [
    path("", annotation_home.home, name="home"),
    path("accounts/", include(account_urls)),
    path("accounts/", include("medhelm_site.accounts.urls")),
    path("studies/", include("annotation.urls")),
    path("delphi/", include("delphi.urls")),
    path("studies/<int:study_id>/jury/", include("jury.urls")),
    path("studies/<int:study_id>/agreement/", include("agreement.urls")),
    path("api/studies/<int:study_id>/agreement/", include(agreement_urls.api)),
    path("api/auth/", include("medhelm_site.accounts.api_urls")),
    path("api/", include("annotation.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("admin/", admin.site.urls),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
]

# A BadParameter (medhelm_site.common.querying) a page lets through answers 400 with its message.
handler400 = "medhelm_site.domain_errors.bad_request_page"
handler500 = "medhelm_site.database_outage.server_error_page"
