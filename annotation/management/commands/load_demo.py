from django.core.management.base import BaseCommand

from annotation.demo import credentials_path, load_demo


class Command(BaseCommand):
    help = (
        "Create the demo accounts, the synthetic rating study and simulated ratings (idempotent)."
    )

    def handle(self, *args, **options) -> None:
        logins = load_demo()
        self.stdout.write(
            self.style.SUCCESS(f"Demo data ready. Logins (also in {credentials_path()}):")
        )
        for login in logins:
            self.stdout.write(f"  {login.role:<12} {login.username:<12} {login.password}")
