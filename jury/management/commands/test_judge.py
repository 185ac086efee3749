"""manage.py test_judge NAME [--save]: test a judge's connection (jury.connection_check)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from jury.connection_check import check_judge_connection
from jury.models import Judge


class Command(BaseCommand):
    help = (
        "Test a judge's connection: the server serves its model id, which structured-output "
        "mode gives a verdict (one probe each), latency; --save stores the first that works."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="the judge's name")
        parser.add_argument(
            "--save", action="store_true", help="store the first working mode on the judge"
        )

    def handle(self, *args: Any, name: str, save: bool = False, **options: Any) -> None:
        judge = Judge.objects.filter(name=name).first()
        if judge is None:
            known = ", ".join(Judge.objects.values_list("name", flat=True)) or "none"
            raise CommandError(f"no judge named {name!r} (judges: {known})")
        report = check_judge_connection(judge=judge, save=save)
        for line in report.lines():
            self.stdout.write(line)
        if report.failure:
            raise CommandError(report.failure)
