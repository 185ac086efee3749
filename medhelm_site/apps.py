"""The site itself as a Django app: it binds the Celery app when Django starts and registers
the checks of its wiring."""

from django.apps import AppConfig


class SiteConfig(AppConfig):
    name = "medhelm_site"
    verbose_name = "medhelm-studio"

    def ready(self) -> None:
        # Every shared_task must bind to this app (its broker from settings) before a web
        # request or a command sends one; the system checks of the Celery wiring register
        # themselves on import.
        from medhelm_site import celery, checks  # noqa: F401
