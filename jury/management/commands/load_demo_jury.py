from django.core.management.base import BaseCommand

from jury.demo import load_demo_jury


class Command(BaseCommand):
    help = "Create the offline local judge and start one jury run on the demo study (idempotent)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--no-run", action="store_true", help="create the judge only")

    def handle(self, *args, no_run: bool = False, **options) -> None:
        judge = load_demo_jury(start_run=not no_run)
        self.stdout.write(self.style.SUCCESS(f"Local judge ready: {judge.name}."))
