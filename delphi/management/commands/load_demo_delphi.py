from django.core.management.base import BaseCommand

from delphi.demo import load_demo_delphi


class Command(BaseCommand):
    help = "Create the demo Delphi study (round 1 answered, round 2 open); idempotent."

    def handle(self, *args, **options) -> None:
        study = load_demo_delphi()
        if study is None:
            self.stderr.write("Run load_demo first: the Delphi demo reuses its accounts.")
            return
        self.stdout.write(self.style.SUCCESS(f"Demo Delphi study ready: {study.title}."))
