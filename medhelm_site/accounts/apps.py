from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "medhelm_site.accounts"
    label = "accounts"
    verbose_name = "Accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from medhelm_site.accounts import schema  # noqa: F401  (registers the token's OpenAPI scheme)
